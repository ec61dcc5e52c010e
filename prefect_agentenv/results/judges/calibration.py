"""Calibrating judges against human labels, and the trust a rubric score carries from it.

A benchmark run's rubric verifications say what each judge decided on each criterion
(:func:`judged_criteria`, read from the task runs' reports) and under which judge setup
(``verification.judge_setup``: :mod:`prefect_agentenv.grading.judge_setup`). :func:`calibrate`
sets them against the reviewers' consensus (:func:`~prefect_agentenv.results.judges.labels.consensus`)
of every run's labels of the setup's criteria (the pool:
:mod:`~prefect_agentenv.results.judges.label_pool`) and gives, for each setup, every judge and the
panel (a single judge is its own panel): agreement, Cohen's κ, TPR and TNR with Wilson intervals
and their counts, per criterion and overall (:mod:`prefect_agentenv.results.judges.agreement`). A
partial score counts as a pass from 0.5.

A calibration counts only when its κ is defined and it rests on at least
:data:`MIN_LABELS_PER_CLASS` labels of each class (:func:`calibration_shortfall`): labels that
hold only ``pass`` cannot tell a judge that passes everything from one that reads.

Records are the file artifact ``calibration.<fingerprint>`` (a new version per calibration, with
the runs and label versions it rests on; the latest is the one that holds), and
``calibrations/<slug>/<hash of task_id/verifier_id>.json``
remembers which fingerprint a verifier was last calibrated under, so a score whose setup has
changed since is *stale* rather than merely uncalibrated (:func:`judge_trust`).
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime

from prefect_agentenv.artifacts import ArtifactBackend, ArtifactError, ArtifactMetadata, ArtifactNotFoundError
from prefect_agentenv.context import Verification, VerificationRow
from prefect_agentenv.grading.judge_records import panel_of, verdicts_of
from prefect_agentenv.grading.judge_setup import SINGLE_JUDGE, JudgeSetup
from prefect_agentenv.grading.verification import read_all
from prefect_agentenv.results.judges.agreement import AgreementStats, agreement_stats
from prefect_agentenv.results.judges.label_pool import LabelSource, RunLabels, plural
from prefect_agentenv.results.judges.labels import (
    HumanLabel,
    LabelFileError,
    LabelItem,
    ReviewerAgreement,
    consensus,
    reviewer_agreement,
)
from prefect_agentenv.results.rows import RubricTrust, RunKey, StatsModel, TaskResult, latest_per_run_key
from prefect_agentenv.results.task_report import TaskReport

__all__ = ["MIN_LABELS_PER_CLASS", "PANEL", "CalibrationRecord", "JudgeCalibration", "JudgedCriterion", "calibrate",
           "calibration_shortfall", "describe_calibration", "held_calibration", "judge_trust", "judged_criteria",
           "load_calibration", "report_trust", "run_judgements", "save_calibration", "stored_report", "tie_labels"]

PANEL = "panel"
"""The name the combined verdict goes by in a calibration (a single judge's is its own)."""
RECORD_FILE = "calibration.json"
MIN_LABELS_PER_CLASS = 3
"""Labels of each class (criteria the reviewers passed, and failed) a calibration needs to count: with
fewer, one label more or less moves κ from trust to none."""


class JudgedCriterion(StatsModel):
    """What the judges of one rubric verification decided on one criterion of one task run."""

    task_id: str
    seed_index: int = 0
    epoch: int = 0
    cell: str | None = None
    verifier_id: str
    criterion_id: str
    setup: JudgeSetup
    judges: dict[str, bool | None]
    """Each judge's verdict (True: pass); None: its answer could not be read."""
    panel: bool | None
    """The verdict the score used; None when the criterion was unscored."""

    @property
    def item(self) -> LabelItem:
        return RunKey(self.task_id, self.seed_index, self.epoch, self.cell), self.verifier_id, self.criterion_id


def judged_criteria(report: TaskReport, key: RunKey) -> list[JudgedCriterion]:
    """Every judged criterion of a task run's rubric verifications that recorded their judge setup."""
    out: list[JudgedCriterion] = []
    for verifier_id, verification in read_all(report.context.metadata.verifications).items():
        setup = _setup(verification)
        if setup is None:
            continue
        panel = panel_of(verification)
        unscored = set(panel.unscored) if panel is not None else set()
        ids = [j.id for j in setup.judges]
        rows = {row.id: row for row in verification.results}
        for criterion_id in [*rows, *sorted(unscored - set(rows))]:
            row = rows.get(criterion_id)
            judges = _verdicts(row, ids, single=setup.panel_rule == SINGLE_JUDGE)
            out.append(JudgedCriterion(task_id=key.task_id, seed_index=key.seed_index, epoch=key.epoch, cell=key.cell,
                                       verifier_id=verifier_id, criterion_id=criterion_id, setup=setup, judges=judges,
                                       panel=None if row is None else _passed(row.result, row.score)))
    return out


def run_judgements(store: ArtifactBackend, results: Iterable[TaskResult]) -> list[JudgedCriterion]:
    """The judged criteria of a run's task runs, read from their stored reports (a task run
    without a readable report has none)."""
    out: list[JudgedCriterion] = []
    for result in latest_per_run_key(list(results)):
        report = stored_report(store, result.report_url)
        if report is not None:
            out += judged_criteria(report, result.run_key)
    return out


def stored_report(store: ArtifactBackend, url: str | None) -> TaskReport | None:
    """The report a URL of this store names, or None when it names none or it cannot be read."""
    key = store.key_of(url)
    if key is None:
        return None
    try:
        return TaskReport.model_validate_json(store.get_object(key))
    except (ArtifactError, ValueError):
        return None


def _setup(verification: Verification) -> JudgeSetup | None:
    raw = (verification.model_extra or {}).get("judge_setup")
    return JudgeSetup.model_validate(raw) if isinstance(raw, dict) else None


def _verdicts(row: VerificationRow | None, ids: Sequence[str], *, single: bool) -> dict[str, bool | None]:
    if row is None:
        return dict.fromkeys(ids)
    if single:
        return {ids[0]: _passed(row.result, row.score)}
    given = {j.judge: j for j in verdicts_of(row) or []}
    return {jid: _passed(given[jid].result, given[jid].score) if jid in given else None for jid in ids}


def _passed(result: str, score: object) -> bool | None:
    if result == "pass":
        return True
    if result == "fail":
        return False
    if result == "partial" and isinstance(score, int | float):
        return float(score) >= 0.5
    return None


def tie_labels(labels: Sequence[HumanLabel], judged: Sequence[JudgedCriterion], file: str) -> list[HumanLabel]:
    """The labels with the criteria hash of the criterion each names, as the run graded it.

    Raises:
        LabelFileError: a label names no judged criterion of the run, or carries the hash of other criteria.
    """
    by_item = {criterion.item: criterion for criterion in judged}
    tied: list[HumanLabel] = []
    for n, label in enumerate(labels, start=1):
        criterion = by_item.get(label.item)
        where = f"{label.task_id} [seed {label.seed_index}, epoch {label.epoch}] {label.verifier_id}/{label.criterion_id}"
        if criterion is None:
            raise LabelFileError(f"{file} label {n}: {where} is no judged criterion of this run")
        if label.criteria_hash not in (None, criterion.setup.criteria):
            raise LabelFileError(f"{file} label {n}: criteria_hash {label.criteria_hash} is not the hash of the "
                                 f"criteria {where} was graded against ({criterion.setup.criteria})")
        tied.append(label.model_copy(update={"criteria_hash": criterion.setup.criteria}))
    return tied


class JudgeCalibration(StatsModel):
    """One judge (or the panel) against the human reference, overall and per criterion."""

    judge: str
    """The judge's id, or ``panel`` for the verdict the scores used."""
    overall: AgreementStats
    criteria: dict[str, AgreementStats]


class CalibrationRecord(StatsModel):
    """A judge setup's calibration: how its judges and its panel agree with human labels."""

    fingerprint: str
    setup: JudgeSetup
    benchmark: str
    """The benchmark of the run it was calibrated from (``calibrate RUN``)."""
    run_id: str
    verifiers: list[str]
    """The ``task_id/verifier_id`` pairs calibrated under this setup."""
    labels: int
    """Reference labels (reviewers' consensus) the figures rest on."""
    tied: int = 0
    """Items left out because the reviewers were split evenly."""
    sources: list[LabelSource] = []
    """The runs whose labels it rests on, each with the label versions read and how many labels it gave."""
    judges: list[JudgeCalibration]
    panel: JudgeCalibration
    reviewers: ReviewerAgreement
    created_at: str

    @property
    def kappa(self) -> float | None:
        """The κ a score's trust is read from: the panel's (the verdict the scores used)."""
        return self.panel.overall.kappa

    def shortfall(self) -> str | None:
        """Why this calibration does not count (None: it counts)."""
        return calibration_shortfall(self.panel.overall)

    def brief(self) -> str:
        """``κ 1.00 on 9 labels (8 on run s/A, 1 on run s/C)``, or why it does not count."""
        runs = ", ".join(f"{s.used} on run {s.run}" for s in self.sources)
        where = f" ({runs})" if runs else ""
        why = self.shortfall()
        if why is not None:
            return f"not calibrated: {why}{where}"
        return f"κ {self.kappa:.2f} on {plural(self.labels, 'label')}{where}"


def calibration_shortfall(stats: AgreementStats) -> str | None:
    """Why figures cannot stand for a calibration: κ undefined, or too few labels of a class; with the counts."""
    counts = f"{plural(stats.n, 'label')}: {stats.tpr_n} pass, {stats.tnr_n} fail"
    if stats.kappa is None:
        if stats.n == 0:
            why = "the judge left every labelled criterion unscored"
        elif stats.tnr_n == 0:
            why = "the labels hold only `pass` (label some failing criteria)"
        elif stats.tpr_n == 0:
            why = "the labels hold only `fail` (label some passing criteria)"
        else:
            why = "the judge and the labels each gave one verdict only"
        return f"κ undefined: {why} ({counts})"
    if min(stats.tpr_n, stats.tnr_n) < MIN_LABELS_PER_CLASS:
        kind = "failing" if stats.tnr_n < MIN_LABELS_PER_CLASS else "passing"
        return (f"too few {kind} labels for κ {stats.kappa:.2f} to hold: at least {MIN_LABELS_PER_CLASS} of "
                f"each class are needed (label more {kind} criteria) ({counts})")
    return None


def calibrate(setups: Sequence[JudgeSetup], pool: Sequence[tuple[RunLabels, Sequence[JudgedCriterion]]], *,
              benchmark: str, run_id: str) -> list[CalibrationRecord]:
    """One record per setup with labelled criteria in the pool: each run's labels of the setup's criteria
    (same criteria hash) against what that run's judges decided under this very setup."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    records = []
    for setup in sorted({s.fingerprint: s for s in setups}.values(), key=lambda s: s.fingerprint):
        pairs: list[tuple[JudgedCriterion, HumanLabel]] = []
        sources: list[LabelSource] = []
        groups: list[list[HumanLabel]] = []
        tied = 0
        for run, judged in pool:
            mine = {c.item: c for c in judged if c.setup.fingerprint == setup.fingerprint}
            labels = [label for label in run.of_criteria(setup.criteria) if label.item in mine]
            if not labels:
                continue
            reference, ties = consensus(labels)
            pairs += [(mine[item], label) for item, label in reference.items()]
            sources.append(run.source(setup.criteria, used=len(reference)))
            groups.append(labels)
            tied += ties
        if not pairs:
            continue
        records.append(CalibrationRecord(
            fingerprint=setup.fingerprint, setup=setup, benchmark=benchmark, run_id=run_id,
            verifiers=sorted({f"{c.task_id}/{c.verifier_id}" for c, _ in pairs}), labels=len(pairs), tied=tied,
            sources=sources, judges=[_judge(j.id, pairs, _judge_verdict(j.id)) for j in setup.judges],
            panel=_judge(PANEL, pairs, lambda c: c.panel), reviewers=reviewer_agreement(*groups), created_at=now))
    return records


def _judge_verdict(judge_id: str) -> Callable[[JudgedCriterion], bool | None]:
    return lambda criterion: criterion.judges.get(judge_id)


def _judge(name: str, pairs: Sequence[tuple[JudgedCriterion, HumanLabel]],
           verdict: Callable[[JudgedCriterion], bool | None]) -> JudgeCalibration:
    per_criterion: dict[str, list[tuple[bool | None, bool]]] = defaultdict(list)
    for criterion, label in pairs:
        per_criterion[criterion.criterion_id].append((verdict(criterion), label.passed))
    everything = [pair for pairs_ in per_criterion.values() for pair in pairs_]
    return JudgeCalibration(judge=name, overall=agreement_stats(everything),
                            criteria={cid: agreement_stats(p) for cid, p in sorted(per_criterion.items())})


def _record_id(fingerprint: str) -> str:
    return f"calibration.{fingerprint}"


def _lineage_key(slug: str, verifier: str) -> str:
    """Where the fingerprint a ``task_id/verifier_id`` was last calibrated under is kept (hashed: a
    seeded task's id holds characters a key may not)."""
    return f"calibrations/{slug}/{hashlib.sha256(verifier.encode()).hexdigest()[:24]}.json"


def save_calibration(store: ArtifactBackend, record: CalibrationRecord) -> str:
    """Publish the record as the next version for its fingerprint, remember the fingerprint each of its
    verifiers was calibrated under (in every benchmark its labels came from), and give the version."""
    meta = store.publish_files(_record_id(record.fingerprint), {RECORD_FILE: record.model_dump_json(indent=1).encode()})
    for slug in sorted({record.benchmark, *(s.benchmark for s in record.sources)}):
        for verifier in record.verifiers:
            store.put_object(_lineage_key(slug, verifier), json.dumps({"fingerprint": record.fingerprint}))
    return meta.version


def held_calibration(store: ArtifactBackend, fingerprint: str) -> tuple[str, CalibrationRecord] | None:
    """The calibration of a setup that holds (its latest version) with its version; None when never calibrated."""
    versions = store.list_versions(_record_id(fingerprint))
    if not versions:
        return None
    return versions[-1].version, CalibrationRecord.model_validate_json(store.read_file(versions[-1], RECORD_FILE))


def load_calibration(store: ArtifactBackend, fingerprint: str) -> CalibrationRecord | None:
    """The latest calibration of a setup, or None when it was never calibrated."""
    held = held_calibration(store, fingerprint)
    return held[1] if held is not None else None


def describe_calibration(store: ArtifactBackend, meta: ArtifactMetadata) -> str | None:
    """One version of a ``calibration.<fingerprint>`` artifact in words (``artifact list``); None for another artifact."""
    if not meta.id.startswith("calibration.") or meta.find_file(RECORD_FILE) is None:
        return None
    try:
        record = CalibrationRecord.model_validate_json(store.read_file(meta, RECORD_FILE))
    except (ArtifactError, ValueError):
        return None
    return f"calibration of judge setup {record.fingerprint}: {record.brief()}"


def judge_trust(store: ArtifactBackend, slug: str, task_id: str, verifier_id: str, setup: JudgeSetup) -> RubricTrust:
    """The trust of one verifier's setup, from the store's calibration records."""
    record = load_calibration(store, setup.fingerprint)
    if record is not None:
        shortfall = record.shortfall()
        return RubricTrust(verifier_id=verifier_id, fingerprint=setup.fingerprint, calibrated=shortfall is None,
                           labels=record.labels, kappa=record.kappa, shortfall=shortfall, mock=setup.mock)
    try:
        last = json.loads(store.get_object(_lineage_key(slug, f"{task_id}/{verifier_id}")))
    except (ArtifactNotFoundError, ValueError):
        last = None
    stale = isinstance(last, dict) and last.get("fingerprint") not in (None, setup.fingerprint)
    return RubricTrust(verifier_id=verifier_id, fingerprint=setup.fingerprint, calibrated=False, stale=stale,
                       mock=setup.mock)


def report_trust(store: ArtifactBackend, slug: str, task_id: str, report: TaskReport, *,
                 required_kappa: float | None = None) -> list[RubricTrust]:
    """The trust of every judged rubric score of a task run's report (``required_kappa``: the run's judge gate)."""
    out = []
    for verifier_id, verification in read_all(report.context.metadata.verifications).items():
        setup = _setup(verification)
        if setup is None:
            continue
        panel = panel_of(verification)
        trust = judge_trust(store, slug, task_id, verifier_id, setup).model_copy(update={
            "disagreement": None if panel is None else panel.disagreement,
            "unscored": 0 if panel is None else len(panel.unscored), "scored": verification.score is not None,
            "required_kappa": required_kappa})
        out.append(trust)
    return out
