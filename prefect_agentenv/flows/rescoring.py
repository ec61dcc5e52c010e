"""Rescoring a benchmark run: each task run's kept submission, scored again by current verifiers.

Every task run keeps its submission (``engine/submission_record``). A rescore reads the
run's results, finds each task run's submission, restores it into fresh envs and sandboxes (as
isolated scoring does: ``scoring.runtime`` over each env's deploy fields, its state loaded, the
agents' files in new sandboxes) and runs the task's verifiers there. No agent under test is
deployed: the replies and trajectories come from the submission. Judges are deployed as the
verifiers ask (a rubric's judge agent or judge model).

The verifiers are the run's frozen task documents' unless a ``--task`` document or a
``--benchmark`` file gives current ones (matched by task id and seed). The new results are a new
scoring version of the same run (``results/scoring_versions``); a task run that could
not be rescored keeps its previous result there, and is listed with the reason.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, Field

from prefect_agentenv.artifacts import ArtifactBackend, ArtifactNotFoundError
from prefect_agentenv.documents.loading import fill_placeholders
from prefect_agentenv.documents.models import TaskDocument
from prefect_agentenv.documents.scoring import ScoringConfig, verifier_steps, with_scoring_env
from prefect_agentenv.engine.execute import run_body
from prefect_agentenv.engine.reporting import build_report
from prefect_agentenv.engine.run_scope import open_run
from prefect_agentenv.engine.scoring_placement import IsolatedScoring
from prefect_agentenv.engine.submission_record import StoredSubmission, read_submission
from prefect_agentenv.exceptions import ArtifactError, ConfigurationError
from prefect_agentenv.flows.adapters.failures import classify_report
from prefect_agentenv.results import (
    TaskResult,
    TaskSnapshot,
    cell_suffix,
    latest_per_run_key,
    summarize,
)
from prefect_agentenv.results.judges.calibration import report_trust
from prefect_agentenv.results.store.run_lookup import find_run
from prefect_agentenv.results.store.run_store import ResultsStore, canonical_json, result_from_report, task_key
from prefect_agentenv.results.store.scoring_store import next_scoring, write_scoring
from prefect_agentenv.results.store.scoring_versions import ScoringVersion, version_folder
from prefect_agentenv.results.task_report import ScoringSummary, TaskReport
from prefect_agentenv.runtime.resources.overrides import RunOverrides
from prefect_agentenv.steps.base import VerifierStep

DocumentsSource = Literal["frozen", "task", "benchmark"]


class RescoredRun(BaseModel):
    """One task run scored again: its score before (the version shown until now) and after."""

    task_id: str
    seed_index: int = 0
    epoch: int = 0
    cell: str | None = None
    """The sweep cell the task run belongs to (``None`` outside a sweep)."""
    before: float | None = None
    after: float | None = None
    outcome: str
    """The new outcome (``PASSED``, ``BELOW_ONE``, …)."""


class RescoreResult(BaseModel):
    """What a rescore did: the new scoring version, every task run rescored, every one that was not."""

    slug: str
    run_id: str
    version: int
    """The new scoring version's number (2 for the first rescore)."""
    shown: int
    """The version the run's summary shows from now on (the new one)."""
    documents: DocumentsSource
    source: str | None = None
    rescored: list[RescoredRun] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)
    """Task runs that could not be rescored (they keep their previous result), with why."""
    unmatched: list[str] = Field(default_factory=list)
    """Tasks of ``--task`` / ``--benchmark`` the run has no task run of."""
    results_url: str
    headline: str

    def markdown(self) -> str:
        """The rescore as the CLI prints it."""
        lines = [f"# {self.slug}/{self.run_id}: scoring version {self.version} "
                 f"({'frozen task documents' if self.documents == 'frozen' else self.source})", "",
                 f"The run's summary now shows scoring version {self.shown}; every earlier version is kept.",
                 f"**{self.headline}**", "", "| task | seed | epoch | before | after | outcome |",
                 "|---|---|---|---|---|---|"]
        lines += [f"| {r.task_id}{f' ({r.cell})' if r.cell else ''} | {r.seed_index} | {r.epoch} | "
                  f"{_score(r.before)} | {_score(r.after)} | {r.outcome} |" for r in self.rescored]
        if self.missing:
            lines += ["", "Not rescored (previous result kept):", *[f"- {m}" for m in self.missing]]
        if self.unmatched:
            lines += ["", "Not in the run:", *[f"- {u}" for u in self.unmatched]]
        return "\n".join(lines) + "\n"


def _score(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


@dataclass
class _Documents:
    """The documents a rescore scores with, by (task id, seed index); the run's frozen ones when
    ``given`` is None."""

    kind: DocumentsSource
    source: str | None = None
    given: dict[tuple[str, int], TaskDocument] | None = None
    any_seed: dict[str, TaskDocument] = field(default_factory=dict)
    """A ``--task`` document: one document for every seed of its task (each seed filled in)."""


def load_documents(task: str | None, benchmark: str | None) -> _Documents:
    """The current documents named on the command line (none: the run's frozen ones).

    Raises:
        ConfigurationError: both were given.
        TaskDocumentError: a document is invalid (every problem listed).
    """
    if task and benchmark:
        raise ConfigurationError("give --task or --benchmark, not both")
    if task:
        from prefect_agentenv.flows.adapters.task_parameter import resolve_task_parameter

        document = resolve_task_parameter(task)
        return _Documents("task", task, {}, {document.id: document})
    if benchmark:
        from prefect_agentenv.engine.benchmark_source import load_source

        loaded = load_source(None, benchmark)
        return _Documents("benchmark", benchmark, {(t.task_id, t.seed_index): t.document for t in loaded.tasks})
    return _Documents("frozen")


async def rescore_run(store: ArtifactBackend, ref: str, documents: _Documents, *,
                      overrides: Mapping[str, str] | None = None) -> RescoreResult:
    """Rescore the benchmark run ``ref`` names and record the new scoring version.

    Raises:
        ArtifactNotFoundError: no such run, or it has no results.
        ConfigurationError: an override is not a run override.
    """
    parsed = RunOverrides.parse(dict(overrides or {}))
    found = await asyncio.to_thread(find_run, store, ref)
    results = ResultsStore(store, found.slug, found.run_id)
    from prefect_agentenv.results.store.scoring_store import read_version

    shown = latest_per_run_key(await asyncio.to_thread(read_version, store, found.slug, found.run_id))
    own = {r.run_key: r for r in latest_per_run_key(await asyncio.to_thread(results.read_results))}
    if not own:
        raise ArtifactNotFoundError(f"benchmark run {found.slug}/{found.run_id} has no results to rescore")
    rescore = _Rescore(results, documents, parsed, await asyncio.to_thread(next_scoring, results))
    lines = [await rescore.one(own.get(r.run_key, r), r) for r in shown]
    if documents.given is not None and not rescore.done and not rescore.missing:
        raise ConfigurationError(f"no task run of {found.slug}/{found.run_id} is a task of {documents.source} "
                                 f"(it ran {', '.join(sorted({r.task_id for r in shown}))}): nothing was rescored")
    version = ScoringVersion(number=rescore.number, created_at=datetime.now(UTC).isoformat(),
                             documents=documents.kind, source=documents.source, documents_sha256=rescore.hashes,
                             results="", rescored=len(rescore.done), missing=rescore.missing,
                             headline=summarize(lines).headline)
    entry = await asyncio.to_thread(write_scoring, results, version, lines)
    listed = entry.scorings[-1]
    return RescoreResult(slug=found.slug, run_id=found.run_id, version=listed.number,
                         shown=entry.shown_scoring or listed.number, documents=documents.kind,
                         source=documents.source, rescored=rescore.done, missing=rescore.missing,
                         unmatched=rescore.unmatched(own.values()), results_url=store.object_url(listed.results),
                         headline=_headline(lines))


def _headline(lines: list[TaskResult]) -> str:
    from prefect_agentenv.flows.ui.benchmark import headline_text

    return headline_text(summarize(lines))


@dataclass
class _Rescore:
    """One rescore in progress: the documents, the results it wrote, what it could not score."""

    results: ResultsStore
    documents: _Documents
    overrides: RunOverrides
    number: int
    done: list[RescoredRun] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    hashes: dict[str, str] = field(default_factory=dict)

    async def one(self, own: TaskResult, shown: TaskResult) -> TaskResult:
        """The task run's result in the new version: rescored, or ``shown`` kept with the reason."""
        label = f"{own.task_id} (seed {own.seed_index}, epoch {own.epoch})"
        key = task_key(own.task_id, own.seed_index)
        document = await asyncio.to_thread(self._document, own, key)
        if document is None:
            return shown
        unsupported = await asyncio.to_thread(_refusal, document)
        if unsupported is not None:
            self.missing.append(f"{label}: cannot be rescored: {unsupported}")
            return shown
        submission_id = own.task_run_id or own.flow_run_id
        try:
            if submission_id is None:
                raise ArtifactNotFoundError("its result names no run")
            record = await asyncio.to_thread(read_submission, self.results.store, submission_id)
        except (ArtifactError, ValueError) as exc:
            self.missing.append(f"{label}: no submission to rescore ({_first_line(exc)})")
            return shown
        kept = kept_environment_missing(document, record)
        if kept is not None:
            self.missing.append(f"{label}: cannot be rescored: {kept}")
            return shown
        snapshot = await asyncio.to_thread(self._snapshot, key, document, own)
        report = await score_submission(document, record, self.overrides, flow_run_id=own.flow_run_id)
        url = await asyncio.to_thread(self._keep_report, key, own, report)
        result = result_from_report(report, own.run_key, seed=own.seed, tags=own.tags, report_url=url,
                                    snapshot=snapshot, skip_policy=document.skip_policy,
                                    task_run_id=own.task_run_id, failure=classify_report(report, document),
                                    setup=own.setup)
        self.done.append(RescoredRun(task_id=own.task_id, seed_index=own.seed_index, epoch=own.epoch,
                                     cell=own.cell, before=shown.score, after=result.score, outcome=result.outcome.value))
        judges = await asyncio.to_thread(report_trust, self.results.store, self.results.slug, own.task_id, report)
        return result.model_copy(update={"published": own.published, "judges": judges})

    def _document(self, own: TaskResult, key: str) -> TaskDocument | None:
        """The document to score ``own`` with; None (and why, unless not asked for) when there is none."""
        try:
            return self._found_document(own, key)
        except ValueError as exc:  # a frozen copy this version cannot read, a seed that breaks the document
            self.missing.append(f"{own.task_id} (seed {own.seed_index}): its document is not valid: "
                                f"{_first_line(exc)}")
            return None

    def _found_document(self, own: TaskResult, key: str) -> TaskDocument | None:
        docs = self.documents
        if docs.given is None:
            try:
                frozen = self.results.read_snapshot(key, own.snapshot.sha256 if own.snapshot else None)
            except ArtifactError as exc:
                self.missing.append(f"{own.task_id}: no frozen task document ({_first_line(exc)})")
                return None
            return TaskDocument.model_validate(frozen)
        if own.task_id in docs.any_seed:
            seeded = fill_placeholders(docs.any_seed[own.task_id].model_dump(mode="json", by_alias=True), own.seed)
            return TaskDocument.model_validate(seeded)
        document = docs.given.get((own.task_id, own.seed_index))
        if document is None and docs.kind == "benchmark":
            self.missing.append(f"{own.task_id} (seed {own.seed_index}): not in {docs.source}")
        return document

    def _snapshot(self, key: str, document: TaskDocument, own: TaskResult) -> TaskSnapshot | None:
        """The frozen snapshot when scored with it, else the given document frozen in the version."""
        if self.documents.given is None:
            if own.snapshot:
                self.hashes[key] = own.snapshot.sha256
            return own.snapshot
        data = canonical_json(document.model_dump(mode="json", by_alias=True))
        sha = self.hashes[key] = hashlib.sha256(data).hexdigest()
        object_key = f"{version_folder(self.results.folder, self.number)}/tasks/{key}.json"
        return TaskSnapshot(sha256=sha, url=self.results.store.put_object(object_key, data))

    def _keep_report(self, key: str, own: TaskResult, report: TaskReport) -> str:
        name = f"{key}-epoch{own.epoch}{cell_suffix(own.cell)}.json"  # a sweep's cells apart, as the run's own
        object_key = f"{version_folder(self.results.folder, self.number)}/reports/{name}"
        return self.results.store.put_object(object_key, report.model_dump_json(indent=2))

    def unmatched(self, own: Iterable[TaskResult]) -> list[str]:
        """Tasks the given documents name that the run never ran."""
        docs = self.documents
        ran = {(r.task_id, r.seed_index) for r in own}
        ids = {task_id for task_id, _ in ran}
        given = sorted(docs.given or {}) if docs.given is not None else []
        return ([f"{t} (seed {s})" for t, s in given if (t, s) not in ran]
                + [t for t in sorted(docs.any_seed) if t not in ids])


async def score_submission(document: TaskDocument, record: StoredSubmission, overrides: RunOverrides, *,
                           flow_run_id: str | None = None) -> TaskReport:
    """The report of ``document``'s verifiers on ``record`` restored into fresh envs (no agent runs)."""
    scoring = document.scoring or ScoringConfig()
    steps = with_scoring_env(document.steps, scoring) if document.scoring else document.steps
    scorer = IsolatedScoring(verifier_steps(steps), scoring, run_body)
    started, t0 = datetime.now(UTC).isoformat(), time.monotonic()
    scope = open_run(f"{document.id}-rescore", overrides=overrides)
    async with scope as parent:
        result = await scorer.score(parent, record.start_context(), record.submission())
    network = scoring.network.mode if scoring.network else None
    return build_report(task_id=document.id, flow_run_id=flow_run_id, result=result, started_at=started,
                        duration_s=time.monotonic() - t0, teardown=scope.teardown, warnings=[],
                        secrets=parent.redact, skip_policy=document.skip_policy,
                        transcript=None,  # the run's own is in the submission; this one only scored
                        scoring=ScoringSummary(mode="isolated", attempts=scorer.attempts, network=network,
                                               env=sorted(scoring.env)))


def _refusal(document: TaskDocument) -> str | None:
    """The first reason a verifier of ``document`` gives for not rescoring now (None: they all can)."""
    return next((why for s in document.steps if isinstance(s, VerifierStep) and (why := s.rescore_refusal())), None)


def kept_environment_missing(document: TaskDocument, record: StoredSubmission) -> str | None:
    """Why ``record`` holds nothing for the verifiers that rescore from a kept container folder (a
    Harbor task's workdir), or None when it does (or none needs one)."""
    needs = [s.id for s in document.steps if isinstance(s, VerifierStep) and s.rescore_needs_environment]
    if not needs or set(needs) & set(record.environments):
        return None
    return (f"its run kept no final workdir for {', '.join(needs)} (it ran before this version kept them, its "
            "workdir was over the size kept, it was scored in isolated mode, or its tests never ran)")


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


__all__ = ["RescoreResult", "RescoredRun", "load_documents", "rescore_run", "score_submission"]
