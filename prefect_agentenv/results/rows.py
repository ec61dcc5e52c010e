"""Benchmark results: one row per task run, its run key, and the denominator policy.

**Denominator policy** (docs/scoring.md): ``PASSED``, ``BELOW_ONE``, ``FAILED`` and
``TIMED_OUT`` runs count in the mean score and the pass rate, FAILED and TIMED_OUT with score 0
(a crash or a timeout must not make a run look better); ``UNSCORED`` runs are counted
separately and left out of both, since there was nothing to grade.

**Failures** (docs/scoring.md, "Agent or infrastructure"): a run that did not pass carries a
:class:`FailureCause`, ``agent`` (a wrong answer, an agent error, a timeout) or ``infrastructure``
(a deploy, a Prefect API call, a verifier, a run that never reached its prompt). An
infrastructure failure left out of the mean by the benchmark's policy is ``excluded``: it is
counted apart, never as 0 and never as a score.

**Run keys.** A benchmark runs each task with each seed for each epoch (in a sweep, in each
cell); ``(task_id, seed_index, epoch, cell)`` identifies one run. A resumed benchmark may hold
several results for one key (the errored attempt, then the rerun): the last one wins everywhere
in this package.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, computed_field

from prefect_agentenv.attribute_docs import attribute_docstrings
from prefect_agentenv.grading.outcome import Outcome, SkipPolicy
from prefect_agentenv.grading.verification import Verification, Verifications, read_all
from prefect_agentenv.usage import TokenUsage

DENOMINATOR_OUTCOMES = frozenset({Outcome.PASSED, Outcome.BELOW_ONE, Outcome.FAILED, Outcome.TIMED_OUT})
"""Outcomes that count in the mean score and the pass rate."""
ERRORED_OUTCOMES = frozenset({Outcome.FAILED, Outcome.TIMED_OUT})
"""Outcomes of runs that did not finish normally; they score 0 and are rerun on resume."""
DENOMINATOR_POLICY = (
    "PASSED, BELOW_ONE, FAILED and TIMED_OUT runs count in the mean score and the pass rate "
    "(FAILED and TIMED_OUT score 0); UNSCORED runs are reported separately and left out of both."
)
EXCLUSION_POLICY = (
    " Infrastructure failures still failed after their retries are left out of both as well"
    " (infrastructure.exclude_from_mean) and counted as excluded."
)
"""Added to the policy's sentence in a summary where the benchmark's policy excluded some runs."""


class StatsModel(BaseModel):
    """Base of the statistics models: attribute docstrings become field descriptions."""

    model_config = ConfigDict(json_schema_extra=attribute_docstrings)


class RunKey(NamedTuple):
    """Identity of one task run in a benchmark: the task, which of its seeds, which epoch, and in
    a sweep which cell (``None`` outside a sweep)."""

    task_id: str
    seed_index: int = 0
    epoch: int = 0
    cell: str | None = None

    def label(self) -> str:
        where = f", cell {self.cell}" if self.cell is not None else ""
        return f"{self.task_id} [seed {self.seed_index}, epoch {self.epoch}{where}]"

    def sort_key(self) -> tuple[str, str, int, int]:
        """Cell first, then task, seed and epoch (a missing cell sorts first)."""
        return (self.cell or "", self.task_id, self.seed_index, self.epoch)


TaskKey = tuple[str, int]
"""``(task_id, seed_index)``: one problem of the benchmark, attempted once per epoch."""

RunStatus = Literal["completed", "failed", "crashed", "not_run", "cancelled"]
"""``completed`` / ``failed`` as in the task report; ``crashed``: the flow run ended without one;
``not_run``: never started (``not_run`` says why: the run's budget was spent); ``cancelled``: an
operator cancelled it while the benchmark ran (``control cancel``: UNSCORED, run again by a resume)."""

FailureKind = Literal["agent", "infrastructure"]
"""Whose failure a run's is: the agent's (it answered wrongly, failed or ran out of time) or the
setup's (the run never gave the agent a fair attempt)."""


class FailureCause(StatsModel):
    """Why a task run did not pass, as the benchmark classified it from what failed.

    ``reason`` is one of the documented reasons (docs/scoring.md); it is read as text, so a result
    written by a later version with a reason this one does not know still loads.
    """

    kind: FailureKind
    reason: str
    """``below_one``, ``agent_error``, ``prompt_timeout``, ``timed_out``, ``step_failed``,
    ``instance_exited`` (agent); ``deploy_failed``, ``setup_failed``, ``instance_exited``,
    ``verifier_failed``, ``prefect_api``, ``no_report``, ``runner_error``, ``stopped``,
    ``not_started``, ``configuration`` (infrastructure)."""
    retryable: bool = False
    """Whether a retry could end otherwise: infrastructure failures but those that fail the same
    way every time (a run refused before it started, a configuration error, a Prefect 4xx)."""
    step_id: str | None = None
    """The step that failed, when one did."""
    step_type: str | None = None
    error_type: str | None = None
    """The class name of the error that failed it (``DeployError``, ``PrefectHTTPStatusError``…)."""
    message: str | None = None
    """The first line of the error."""
    excluded: bool = False
    """Left out of the mean score and the pass rate: an infrastructure failure still failed after
    its retries, under ``infrastructure.exclude_from_mean``."""

    @property
    def infrastructure(self) -> bool:
        return self.kind == "infrastructure"

    def label(self) -> str:
        """``infrastructure: deploy_failed`` — how tables and logs name it."""
        return f"{self.kind}: {self.reason}"


class RetriedAttempt(StatsModel):
    """An attempt of a task run that failed for infrastructure and was run again."""

    failure: FailureCause
    flow_run_id: str | None = None
    task_run_id: str | None = None
    report_url: str | None = None
    """That attempt's report, when it wrote one."""
    started_at: str | None = None
    duration_s: float = 0.0


class TaskSnapshot(StatsModel):
    """Where the frozen copy of the task document a run used is stored, and its content hash."""

    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """Hex sha256 of the canonical JSON of the document (sorted keys, no spaces, UTF-8)."""
    url: str
    """Object URL of the stored snapshot."""


class PublishedVersion(StatsModel):
    """The published benchmark version a run ran (``prefect-agentenv publish``), and its content hash."""

    model_config = ConfigDict(frozen=True, json_schema_extra=attribute_docstrings)  # a value: compared, hashed

    slug: str
    version: str
    hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    """Hex sha256 over everything the version froze: tasks, seed rows, settings, pinned artifacts."""

    def __str__(self) -> str:
        return f"{self.slug}@{self.version}"


class AgentSetup(StatsModel):
    """One agent a task run deployed, as it was configured and as its card named itself."""

    name: str
    """The agent's name in the task (``agent_name``)."""
    agent_id: str | None = None
    """The registry id it was deployed from (``a2a_agent_id``, after overrides)."""
    version: str | None = None
    """The version its A2A card declares."""
    model: str | None = None
    """The model it was configured with (``mock``: the built-in mock model)."""
    confinement: str | None = None
    """``unconfined`` (a plain process of the runner's user), ``confined, public network`` (its
    network widened to the host's), ``confined``, ``docker`` (a container of its own) or ``docker, host
    network`` (a container on the host's network); ``None`` when not known (an agent reached by URL,
    results recorded before agents were confined)."""

    def label(self) -> str:
        """``scripted 1.0.0``, ``llm 1.0.0 on mock (unconfined)``: how a comparison names it; a
        confined agent's label says nothing more (confined is the default)."""
        text = " ".join(part for part in (self.agent_id or "unknown agent", self.version) if part)
        text = f"{text} on {self.model}" if self.model else text
        return f"{text} ({self.confinement})" if self.confinement and self.confinement != "confined" else text


class SetupFingerprint(StatsModel):
    """What produced a result: the agents, the models, the judges, the overrides, the package.

    The frozen task document is the result's ``snapshot`` (its sha256). Secrets never appear:
    free-form overrides are recorded by digest (see ``RunOverrides.recorded``).
    """

    benchmark: str | None = None
    """The benchmark's slug."""
    benchmark_version: str | None = None
    """The benchmark document's ``version``."""
    package_version: str | None = None
    """The version of prefect-agentenv that ran the benchmark."""
    agents: list[AgentSetup] = Field(default_factory=list)
    """Every agent the task run deployed, by name."""
    models: list[str] = Field(default_factory=list)
    """The models the agents' replies named, when they name one."""
    judge_models: list[str] = Field(default_factory=list)
    """The models of the judges that graded (``mock``: the built-in mock model)."""
    overrides: dict[str, str] = Field(default_factory=dict)
    """The effective run overrides (the benchmark's defaults, then the run's)."""


def _empty(value: object) -> bool:
    return not value


class RubricTrust(StatsModel):
    """How far one rubric score of a task run can be trusted: its judge setup's calibration."""

    verifier_id: str
    fingerprint: str
    """The judge setup's fingerprint (``verification.judge_setup``)."""
    calibrated: bool
    """A calibration against human labels that counts exists for exactly this setup (κ defined, enough
    labels of each class)."""
    stale: bool = False
    """The verifier was calibrated under another setup: its judge, prompt, criteria or rule changed since."""
    labels: int = 0
    """Labels the calibration rests on."""
    kappa: float | None = None
    """The calibration's Cohen's κ (the panel's verdict against the human labels)."""
    shortfall: str | None = None
    """Why the setup's recorded calibration does not count (κ undefined, too few labels of a class)."""
    required_kappa: float | None = None
    """The κ the run's judge gate asked for (``--require-calibrated-judge``); None without a gate."""
    mock: bool = False
    """A judge of the setup is the built-in mock model, which passes every criterion unless scripted."""
    disagreement: float | None = None
    """A panel's disagreement on this task run (mean share of judge pairs that disagree per criterion)."""
    unscored: int = 0
    """Criteria no judge could grade readably: neither passed nor failed."""
    scored: bool = True
    """The verification has a score (False: every criterion was unscored, so no score rests on the judge)."""

    def meets(self, min_kappa: float | None) -> bool:
        """Calibrated, and (with a threshold) to at least ``min_kappa``."""
        if not self.calibrated or self.kappa is None:
            return False
        return min_kappa is None or self.kappa >= min_kappa

    def mark(self) -> str:
        """``calibrated κ 0.72 (40 labels)``, ``κ 0.55 below the gate's 0.6 (9 labels)``, ``not calibrated:
        κ undefined: …``, ``uncalibrated``, ``stale calibration``: how tables show it. Never
        "calibrated" for a setup the run's gate would refuse."""
        labels = f"{self.labels} label{'' if self.labels == 1 else 's'}"
        if self.calibrated and self.kappa is not None:
            if self.required_kappa is not None and self.kappa < self.required_kappa:
                return f"κ {self.kappa:.2f} below the gate's {self.required_kappa:g} ({labels})"
            return f"calibrated κ {self.kappa:.2f} ({labels})"
        if self.shortfall:
            return f"not calibrated: {self.shortfall}"
        return "stale calibration" if self.stale else "uncalibrated"


class TaskResult(StatsModel):
    """One task run of a benchmark, as appended to the run's ``results.jsonl``.

    Readers of older files must keep working, so unknown members are ignored and every
    member added later needs a default.
    """

    task_id: str
    seed_index: int = 0
    """Position of the seed in the benchmark's seed list (0 when it has none)."""
    seed: dict[str, Any] = Field(default_factory=dict)
    """The seed's values, as substituted into the task document."""
    epoch: int = 0
    """Which repetition of the task and seed this is (0-based)."""
    tags: list[str] = Field(default_factory=list)
    status: RunStatus
    outcome: Outcome
    score: float | None = None
    """The task score; 0 for FAILED and TIMED_OUT, ``None`` when UNSCORED."""
    duration_s: float = 0.0
    error: str | None = None
    report_url: str | None = None
    """Where the run's report.json is stored."""
    flow_run_id: str | None = None
    task_run_id: str | None = None
    """The Prefect task run the task run was, when its benchmark records them as tasks (its page
    then shows it; ``flow_run_id`` is the benchmark's flow run)."""
    snapshot: TaskSnapshot | None = None
    published: PublishedVersion | None = None
    """The published benchmark version the task run came from; ``None`` for a run of files as they are."""
    axis_scores: dict[str, float] = Field(default_factory=dict)
    """Score per axis (``correctness``, ``safety``…): see :func:`axis_scores`."""
    axes_unknown_errors: list[str] = Field(default_factory=list)
    """Verifiers that errored whose axes the document does not declare (a script's rows): the run
    counts 0 on every axis its task scored in other runs and this one did not."""
    files: dict[str, str] = Field(default_factory=dict)
    """Files collected from the agent's sandbox: name → object URL."""
    usage: TokenUsage | None = None
    """Tokens and cost over the task run's prompts, when any reported them."""
    started_at: str | None = None
    finished_at: str | None = None
    failure: FailureCause | None = None
    """Why the run did not pass (``None`` when it passed or was UNSCORED, and in results written
    before runs were classified)."""
    attempts: int = Field(default=1, ge=1)
    """How many times the run was attempted: 1, plus one per infrastructure retry."""
    retried: list[RetriedAttempt] = Field(default_factory=list)
    """The attempts before the last one, each with the infrastructure failure that retried it."""
    setup: SetupFingerprint | None = None
    """What produced the result; ``None`` in results recorded before results carried it."""
    cell: str | None = None
    """The sweep cell the run belongs to (``a2a_agent_id=llm,model=m``: its overrides); ``None``
    outside a sweep and in results recorded before sweeps."""
    not_run: Literal["budget"] | None = None
    """Why the run never started: ``budget``, the benchmark run's budget was spent first. Such a run
    is UNSCORED (in no mean), counted apart, and run by a resume."""
    judges: list[RubricTrust] = Field(default_factory=list, exclude_if=_empty)
    requeued: list[RetriedAttempt] = Field(default_factory=list, exclude_if=_empty)
    """Earlier results of this task run that an operator put back in the queue while the benchmark ran
    (``control requeue``), oldest first; each is also still a line of the results file."""
    """The trust of each rubric score of the run (its judge setup's calibration when the run was
    scored); empty when the run has no judged rubric, and in results recorded before."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def run_key(self) -> RunKey:
        return RunKey(self.task_id, self.seed_index, self.epoch, self.cell)

    @property
    def task_key(self) -> TaskKey:
        return (self.task_id, self.seed_index)

    @property
    def counted(self) -> bool:
        """Whether the run counts in the mean score and the pass rate (not UNSCORED, not an
        infrastructure failure the policy excluded)."""
        return self.outcome in DENOMINATOR_OUTCOMES and not self.excluded

    @property
    def excluded(self) -> bool:
        """An infrastructure failure left out of the mean and the pass rate by the policy."""
        return self.failure is not None and self.failure.excluded

    @property
    def infrastructure_failed(self) -> bool:
        """Whether the run (its last attempt) failed for infrastructure."""
        return self.failure is not None and self.failure.infrastructure

    @property
    def errored(self) -> bool:
        """Whether the run did not finish normally (FAILED, TIMED_OUT, or no report at all)."""
        return self.outcome in ERRORED_OUTCOMES or self.status == "crashed"

    @property
    def rerun_on_resume(self) -> bool:
        """Whether a resumed benchmark runs it again: it errored, or failed for infrastructure
        (a verifier that errored leaves a completed run below one)."""
        return self.errored or self.infrastructure_failed or self.not_run is not None or self.status == "cancelled"

    @property
    def passed(self) -> bool:
        return self.outcome is Outcome.PASSED

    @property
    def counted_score(self) -> float:
        """The score as the mean counts it: errored runs (and a missing score) count 0."""
        return 0.0 if self.errored or self.score is None else float(self.score)


def cell_suffix(cell: str | None) -> str:
    """``.cell-<clean label>-<8 hex>``: a sweep cell in a file name (reports, report pages); empty
    outside a sweep. The digest keeps two labels that clean up alike apart."""
    if cell is None:
        return ""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", cell).strip("-.")[:60]
    return f".cell-{stem}-{hashlib.sha256(cell.encode()).hexdigest()[:8]}"


def latest_per_run_key(results: Iterable[TaskResult]) -> list[TaskResult]:
    """One result per run key, the last one given (a resumed run appends reruns after errors)."""
    latest: dict[RunKey, TaskResult] = {}
    for result in results:
        latest.pop(result.run_key, None)  # keep the order of the last attempts
        latest[result.run_key] = result
    return list(latest.values())


# -- axis scores --------------------------------------------------------------------------------


def axis_scores(verifications: Verifications, skip_policy: SkipPolicy = "zero") -> dict[str, float]:
    """Score per axis from the verification rows that carry an ``axis`` member.

    Only verifiers that count in the task score contribute: with a weight above 0 (the verifiers an ``aggregate_verifiers`` step folds have weight 0, so their rows are not
    counted twice). Each row's effective weight is ``w = row weight × verifier weight`` (both
    1 by default), and per axis, with the weighted_average formula of
    :func:`prefect_agentenv.grading.aggregate.aggregate`::

        P = rows of the axis with w > 0,  N = rows of the axis with w < 0 (penalties)
        axis score = clamp((Σ_P w·s − Σ_N |w|·s) / Σ_P w, 0, 1)     (clamp(1 − Σ_N |w|·s) when P is empty)

    Rows without an axis or with weight 0 are ignored; an axis with no counted row
    is left out. A skipped verifier counts as the task score counts it: under ``skip_policy``
    ``zero`` each of its axes (its rows', else its ``axes``) counts 0 with its weight, under
    ``exclude`` it is left out. An **errored** verifier counts 0 on every axis its document
    declares (its ``axes``, the ``|weight|`` of its criteria per axis): an error never lifts an axis.
    """
    gains: dict[str, float] = defaultdict(float)
    totals: dict[str, float] = defaultdict(float)
    losses: dict[str, float] = defaultdict(float)
    seen: set[str] = set()
    read = read_all(verifications)
    for verification in read.values():
        verifier_weight = verification.weight
        if (verification.skipped and skip_policy == "exclude") or verifier_weight <= 0:
            continue
        for axis, score, row_weight in _skipped_rows(verification) if verification.skipped else _axis_rows(
                verification, read):
            if not axis:
                continue
            weight = row_weight * verifier_weight
            if weight > 0:
                gains[axis] += weight * score
                totals[axis] += weight
            elif weight < 0:
                losses[axis] += -weight * score
            else:
                continue
            seen.add(axis)
    scores = {}
    for axis in sorted(seen):
        raw = (gains[axis] - losses[axis]) / totals[axis] if totals[axis] > 0 else 1.0 - losses[axis]
        scores[axis] = min(1.0, max(0.0, raw))
    return scores


_AxisRow = tuple[str | None, float, float]
"""What a row counts on an axis: its axis (None: none), its score and its weight."""


def _skipped_rows(verification: Verification) -> list[_AxisRow]:
    """A skipped verifier's axes as rows scoring 0: its rows' axes and weights, else its ``axes``."""
    rows: list[_AxisRow] = [(row.axis, 0.0, row.weight) for row in verification.results]
    return rows or [(axis, 0.0, weight) for axis, weight in verification.declared_axes().items()]


def _axis_rows(verification: Verification, verifications: Mapping[str, Verification]) -> list[_AxisRow]:
    """The rows of a verification, plus a row at 0 for each axis an errored verifier declares
    (itself, or one that an ``aggregate_verifiers`` folded: its ``<id>.verifier_error`` row)."""
    rows: list[_AxisRow] = [(row.axis, row.score, row.weight) for row in verification.results]
    errored = [verification] if verification.errored else []
    errored += [verifications[row.verifier_id] for row in verification.results
                if row.id.endswith(".verifier_error") and row.verifier_id is not None
                and row.verifier_id in verifications]
    for source in errored:
        if source.errored:
            rows += [(axis, 0.0, weight) for axis, weight in source.declared_axes().items()]
    return rows


def axes_unknown_errors(verifications: Verifications) -> list[str]:
    """Counted verifiers that errored without declared axes (their rows come from a script)."""
    return [vid for vid, v in read_all(verifications).items() if v.errored and v.weight > 0 and v.axes is None]
