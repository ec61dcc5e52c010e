"""The benchmark results store: results, frozen task snapshots and a runs index, as run records.

Layout in the artifact store's runs area (``put_object`` / ``get_object`` keys)::

    benchmarks/<slug>/runs.json                      index: every run with its headline numbers
    benchmarks/<slug>/<run_id>/run.json              this run's own index entry
    benchmarks/<slug>/<run_id>/results.jsonl         one TaskResult per line, appended as tasks finish
    benchmarks/<slug>/<run_id>/tasks/<task key>.json the task document exactly as run (canonical JSON)

**One writer per run.** Object stores cannot append, so an append reads the file and writes it
back whole (a run of a few hundred tasks rewrites a few hundred kilobytes, which is cheap).
That is safe within one process — a lock serialises appends — but not across processes: only
the benchmark process that owns a run writes it. The runs index is shared by all the runs of a
slug and updated the same way; two benchmarks of one slug finishing at the same instant could
lose an index entry, which :func:`rebuild_runs_index` restores from the runs' own ``run.json``.

The API is synchronous like the store's; async callers use ``asyncio.to_thread``, or
:meth:`ResultsStore.append_async`, which also keeps waiting appends off the thread pool.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import threading
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from prefect_agentenv.artifacts import (
    ArtifactBackend,
    ArtifactConflictError,
    ArtifactIntegrityError,
    ArtifactNotFoundError,
)
from prefect_agentenv.artifacts.keys import UnsafeKeyError, check_segment
from prefect_agentenv.attribute_docs import attribute_docstrings
from prefect_agentenv.jsontypes import canonical_json as canonical_json  # named here too: snapshots hash it
from prefect_agentenv.results import (
    BenchmarkSummary,
    Headline,
    PublishedVersion,
    RunKey,
    RunSetup,
    TaskResult,
    TaskSnapshot,
    latest_per_run_key,
)
from prefect_agentenv.results.result_row import (  # named here too: the store's callers use them
    collected_files as collected_files,
)
from prefect_agentenv.results.result_row import (
    crashed_result as crashed_result,
)
from prefect_agentenv.results.result_row import (
    now_iso as now_iso,
)
from prefect_agentenv.results.result_row import (
    result_from_report as result_from_report,
)
from prefect_agentenv.results.store.scoring_versions import ScoringVersion

BENCHMARKS_FOLDER = "benchmarks"
RUNS_INDEX = "runs.json"
RUN_ENTRY = "run.json"
RESULTS_FILE = "results.jsonl"
TASKS_FOLDER = "tasks"

_UNSAFE_KEY_CHARS = re.compile(r"[^A-Za-z0-9._-]+")
_MAX_TASK_KEY_STEM = 120

logger = logging.getLogger("prefect_agentenv.benchmark")


# -- keys and hashes ----------------------------------------------------------------------------


def run_folder(slug: str, run_id: str) -> str:
    """``benchmarks/<slug>/<run_id>``, both checked as single key segments.

    Raises:
        UnsafeKeyError: the slug or run id is not a valid key segment, or the run id is the
            index's file name.
    """
    check_segment(slug, "benchmark slug")
    check_segment(run_id, "benchmark run id")
    if run_id == RUNS_INDEX:
        raise UnsafeKeyError(f"benchmark run id {run_id!r} is the name of the runs index")
    return f"{BENCHMARKS_FOLDER}/{slug}/{run_id}"


def task_key(task_id: str, seed_index: int = 0) -> str:
    """A store-safe, collision-free name for the snapshot of a task with one of its seeds.

    Task ids are free text, so characters outside ``[A-Za-z0-9._-]`` become ``-``; when that
    changed the id (or it had to be shortened), 8 hex digits of its sha256 are added so two
    ids that clean up alike still get two snapshots. The seed is part of the key because a
    seed's values are substituted into the document.
    """
    stem = _UNSAFE_KEY_CHARS.sub("-", task_id).strip("-.") or "task"
    if stem != task_id or len(stem) > _MAX_TASK_KEY_STEM:
        stem = f"{stem[:_MAX_TASK_KEY_STEM]}-{hashlib.sha256(task_id.encode()).hexdigest()[:8]}"
    return f"{stem}.seed{seed_index}"


# -- resume -------------------------------------------------------------------------------------


def pending_keys(all_keys: Iterable[RunKey], existing_results: Iterable[TaskResult]) -> list[RunKey]:
    """The run keys a resumed benchmark still has to run, in the order of ``all_keys``.

    A key is pending when it has no result yet, or when its last result errored (FAILED,
    TIMED_OUT, or status ``crashed``) or failed for infrastructure (a completed run whose
    verifier errored): those say little about the agent's ability, so they are run again.
    Other completed runs — PASSED, BELOW_ONE and UNSCORED — are kept as they are.
    """
    latest = {result.run_key: result for result in latest_per_run_key(existing_results)}
    pending: list[RunKey] = []
    for key in dict.fromkeys(RunKey(*key) for key in all_keys):
        result = latest.get(key)
        if result is None or result.rerun_on_resume:
            pending.append(key)
    return pending


# -- runs index ---------------------------------------------------------------------------------


class RunEntry(BaseModel):
    """One benchmark run in its slug's runs index."""

    model_config = ConfigDict(json_schema_extra=attribute_docstrings)

    run_id: str
    started_at: str
    """ISO 8601, UTC; orders the runs."""
    finished_at: str | None = None
    """Set once every task has a result; unfinished runs are never a "previous run"."""
    headline: Headline | None = None
    """The summary's headline numbers, when finished."""
    published: PublishedVersion | None = None
    """The published benchmark version the run ran; ``None`` for a run of the files as they were."""
    setup: RunSetup | None = None
    """What produced the run (agents, models, judges, overrides, versions, task documents), when
    finished; ``None`` for runs recorded before the index carried it."""
    cells: list[str] = Field(default_factory=list)
    """A sweep's cells, by label (empty: the run was no sweep)."""
    regressions: list[str] | None = None
    """The rows the paired comparison with the run's baseline marked worse, when finished (a sweep's
    prefixed ``cell <label>:``); ``None`` for runs recorded before the index carried them."""
    regressed_cells: list[str] = Field(default_factory=list)
    """The cells of a sweep with a regression among them."""
    scorings: list[ScoringVersion] = Field(default_factory=list)
    """The run's scoring versions once it was rescored (1, its own, first); empty before."""
    shown_scoring: int | None = None
    """The scoring version ``headline`` and the summary show (``None``: 1, the run's own)."""


class RunsIndex(BaseModel):
    """``benchmarks/<slug>/runs.json``: every run of a benchmark, oldest first."""

    runs: list[RunEntry] = Field(default_factory=list)


def list_runs(store: ArtifactBackend, slug: str) -> list[RunEntry]:
    """Every run in the slug's index, oldest first (empty when the benchmark never ran).

    Raises:
        ArtifactIntegrityError: the index is not valid JSON of the expected shape.
    """
    key = _index_key(slug)
    try:
        raw = store.get_object(key)
    except ArtifactNotFoundError:
        return []
    try:
        index = RunsIndex.model_validate_json(raw)
    except ValidationError as exc:
        raise ArtifactIntegrityError(f"{store.object_url(key)} is not a valid runs index: {exc}") from exc
    return _ordered(index.runs)


def previous_run(store: ArtifactBackend, slug: str, run_id: str) -> RunEntry | None:
    """The run to compare ``run_id`` with: the latest *finished* run of the slug started before it.

    When ``run_id`` is not in the index, every finished run counts as before it. Unfinished
    runs (crashed or still going) are skipped: their partial results would make a misleading
    baseline.
    """
    runs = list_runs(store, slug)
    current = next((run for run in runs if run.run_id == run_id), None)
    earlier = [run for run in runs if run.run_id != run_id and run.finished_at is not None
               and (current is None or _order(run) < _order(current))]
    return earlier[-1] if earlier else None


def rebuild_runs_index(store: ArtifactBackend, slug: str) -> list[RunEntry]:
    """Rewrite the slug's index from the runs' own ``run.json`` entries, and return it.

    The index is a cache of those entries; this repairs it after a lost concurrent update.
    """
    check_segment(slug, "benchmark slug")
    folder = f"{BENCHMARKS_FOLDER}/{slug}"
    entries = []
    for key in store.list_objects(folder):
        parts = key[len(folder) + 1:].split("/")
        if len(parts) == 2 and parts[1] == RUN_ENTRY:
            entries.append(RunEntry.model_validate_json(store.get_object(key)))
    ordered = _ordered(entries)
    store.put_object(_index_key(slug), RunsIndex(runs=ordered).model_dump_json(indent=1))
    return ordered


def read_results(store: ArtifactBackend, slug: str, run_id: str) -> list[TaskResult]:
    """Every result line of a run, in the order appended (reruns included: see ``latest_per_run_key``).

    Raises:
        ArtifactIntegrityError: a line is not a valid result.
    """
    key = f"{run_folder(slug, run_id)}/{RESULTS_FILE}"
    try:
        raw = store.get_object(key)
    except ArtifactNotFoundError:
        return []
    results = []
    for number, line in enumerate(raw.decode().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            results.append(TaskResult.model_validate_json(line))
        except ValidationError as exc:
            raise ArtifactIntegrityError(f"{store.object_url(key)} line {number} is not a valid result: {exc}") from exc
    return results


def _index_key(slug: str) -> str:
    return f"{BENCHMARKS_FOLDER}/{check_segment(slug, 'benchmark slug')}/{RUNS_INDEX}"


def _order(run: RunEntry) -> tuple[datetime, str]:
    try:
        started = datetime.fromisoformat(run.started_at)
    except ValueError:  # written by hand or by another tool: sort it first rather than fail
        started = datetime.min
    if started.tzinfo is None:
        started = started.replace(tzinfo=UTC)
    return (started, run.run_id)


def _ordered(runs: Iterable[RunEntry]) -> list[RunEntry]:
    return sorted(runs, key=_order)


def _source_text(published: PublishedVersion | None) -> str:
    return f"{published} (sha256 {published.hash[:12]}…)" if published else "the benchmark files"


# -- one run ------------------------------------------------------------------------------------


class ResultsStore:
    """The results, snapshots and index entry of one benchmark run.

    Only the process running the benchmark writes a run (see the module docstring); within it,
    appends from several threads or coroutines are serialised.
    """

    def __init__(self, store: ArtifactBackend, slug: str, run_id: str) -> None:
        self.store = store
        self.slug = slug
        self.run_id = run_id
        self.folder = run_folder(slug, run_id)
        self._thread_lock = threading.Lock()
        self._async_lock = asyncio.Lock()

    def __repr__(self) -> str:
        return f"ResultsStore({self.slug!r}, {self.run_id!r}, {self.store!r})"

    @property
    def results_key(self) -> str:
        return f"{self.folder}/{RESULTS_FILE}"

    @property
    def results_url(self) -> str:
        return self.store.object_url(self.results_key)

    # -- results --------------------------------------------------------------------------------

    def append(self, result: TaskResult) -> str:
        """Add one result line to ``results.jsonl`` and return the file's URL.

        In place on a local folder, a read-modify-write of the whole file on an object store
        (:meth:`ArtifactBackend.append_object`); under a lock so concurrent appends from this
        process never drop a line.
        """
        line = result.model_dump_json() + "\n"
        with self._thread_lock:
            return self.store.append_object(self.results_key, line.encode())

    async def append_async(self, result: TaskResult) -> str:
        """:meth:`append` from async code: waiting appends queue on an asyncio lock, not in threads."""
        async with self._async_lock:
            return await asyncio.to_thread(self.append, result)

    def read_results(self) -> list[TaskResult]:
        """Every result line of this run, in the order appended."""
        return read_results(self.store, self.slug, self.run_id)

    def pending(self, all_keys: Iterable[RunKey]) -> list[RunKey]:
        """The keys of ``all_keys`` a resume still has to run (see :func:`pending_keys`)."""
        return pending_keys(all_keys, self.read_results())

    # -- snapshots ------------------------------------------------------------------------------

    def snapshot_key(self, key: str) -> str:
        return f"{self.folder}/{TASKS_FOLDER}/{check_segment(key, 'task key')}.json"

    def snapshot_task(self, key: str, document: Any) -> TaskSnapshot:
        """Freeze the task document as run (after seeds are filled in) and return its hash and URL.

        The stored bytes are :func:`canonical_json`, so their sha256 is the recorded hash.
        Snapshotting the same document again (a resume) is a no-op.

        Args:
            key: the task's key, usually :func:`task_key`.
            document: the document as JSON data (``model_dump(mode="json")`` of a model).

        Raises:
            ArtifactConflictError: the run already froze another document under this key — a
                resume must run the frozen snapshot (:meth:`read_snapshot`), not an edited task.
        """
        data = canonical_json(document)
        sha = hashlib.sha256(data).hexdigest()
        object_key = self.snapshot_key(key)
        try:
            stored = self.store.get_object(object_key)
        except ArtifactNotFoundError:
            return TaskSnapshot(sha256=sha, url=self.store.put_object(object_key, data))
        if stored != data:
            raise ArtifactConflictError(
                f"task {key!r} of benchmark run {self.run_id} was frozen with other content "
                f"(sha256 {hashlib.sha256(stored).hexdigest()[:12]}…, now {sha[:12]}…): a resumed run must "
                "run the frozen snapshot, read it with read_snapshot")
        return TaskSnapshot(sha256=sha, url=self.store.object_url(object_key))

    def read_snapshot(self, key: str, expected_sha256: str | None = None) -> Any:
        """The frozen task document stored under ``key``.

        Raises:
            ArtifactNotFoundError: the run has no snapshot under this key.
            ArtifactIntegrityError: the stored bytes do not hash to ``expected_sha256``.
        """
        object_key = self.snapshot_key(key)
        data = self.store.get_object(object_key)
        if expected_sha256 is not None and hashlib.sha256(data).hexdigest() != expected_sha256:
            raise ArtifactIntegrityError(f"{self.store.object_url(object_key)} does not match its recorded sha256")
        return json.loads(data)

    # -- index ----------------------------------------------------------------------------------

    def check_source(self, published: PublishedVersion | None, cells: Sequence[str] | None = None) -> None:
        """Refuse to resume this run from another source than it started from (and, given ``cells``,
        with other sweep cells: :meth:`check_cells`).

        Every task run of one run comes from the same place (one published version, or the files),
        so its results and its summary say one thing about what ran.

        Raises:
            ArtifactConflictError: the run exists and started from another published version, or
                from the files when ``published`` is a version (or the other way round).
        """
        if cells is not None:
            self.check_cells(cells)
        entry = self._own_entry()
        if entry is None or entry.published == published:
            return
        raise ArtifactConflictError(
            f"run {self.run_id} of benchmark {self.slug} started from {_source_text(entry.published)}, not "
            f"{_source_text(published)}: resume it from the same source, or start a new run")

    def check_cells(self, cells: Sequence[str]) -> None:
        """Refuse to resume this run with other sweep cells than it started with: its results and
        its summary are of one matrix.

        Raises:
            ArtifactConflictError: the run exists and started with other cells (or as no sweep).
        """
        entry = self._own_entry()
        if entry is None or entry.cells == list(cells):
            return
        started = ", ".join(entry.cells) or "no sweep"
        raise ArtifactConflictError(
            f"run {self.run_id} of benchmark {self.slug} started with the cells {started}, not "
            f"{', '.join(cells) or 'no sweep'}: resume it with the same matrix, or start a new run")

    def record_started(self, started_at: str | None = None, *, published: PublishedVersion | None = None,
                       cells: Sequence[str] = ()) -> RunEntry:
        """Enter the run in the index (or keep its entry when resuming); returns the entry."""
        existing = self._own_entry()
        entry = existing or RunEntry(run_id=self.run_id, started_at=started_at or now_iso(), published=published,
                                     cells=list(cells))
        if existing is not None and existing.finished_at is not None:
            entry = existing.model_copy(update={"finished_at": None, "headline": None, "setup": None,  # resumed
                                                "regressions": None, "regressed_cells": []})
        return self._save_entry(entry)

    def record_finished(self, summary: BenchmarkSummary, finished_at: str | None = None, *,
                        regressions: Sequence[str] | None = None, regressed_cells: Sequence[str] = ()) -> RunEntry:
        """Mark the run finished with its headline numbers and what its paired comparison marked
        worse, making it a baseline for later runs.

        ``summary`` is of the run's own scoring (version 1), so a rescored run that was resumed shows
        version 1 again: its new task runs were scored by the run's own verifiers, and a version
        that scored only the earlier ones would hide them. Its rescores stay listed and readable.
        """
        entry = self._own_entry() or RunEntry(run_id=self.run_id, started_at=finished_at or now_iso())
        if entry.shown_scoring not in (None, 1):
            logger.warning("benchmark run %s/%s had been rescored (version %s); it now shows its own scoring "
                           "with the resumed task runs: rescore it again to score them all with the current "
                           "verifiers", self.slug, self.run_id, entry.shown_scoring)
        entry = entry.model_copy(update={"finished_at": finished_at or now_iso(), "headline": summary.headline,
                                         "shown_scoring": None,
                                         "setup": summary.setup,
                                         "regressions": None if regressions is None else list(regressions),
                                         "regressed_cells": list(regressed_cells)})
        return self._save_entry(entry)

    def previous_run(self) -> RunEntry | None:
        """The run to compare this one with (see :func:`previous_run`)."""
        return previous_run(self.store, self.slug, self.run_id)

    def own_entry(self) -> RunEntry | None:
        """The run's ``run.json`` entry (``None`` before it started)."""
        return self._own_entry()

    def save_entry(self, entry: RunEntry) -> RunEntry:
        """Write the run's entry and its line in the runs index."""
        return self._save_entry(entry)

    def _own_entry(self) -> RunEntry | None:
        try:
            return RunEntry.model_validate_json(self.store.get_object(f"{self.folder}/{RUN_ENTRY}"))
        except ArtifactNotFoundError:
            return None

    def _save_entry(self, entry: RunEntry) -> RunEntry:
        with self._thread_lock:
            self.store.put_object(f"{self.folder}/{RUN_ENTRY}", entry.model_dump_json(indent=1))
            others = [run for run in list_runs(self.store, self.slug) if run.run_id != entry.run_id]
            index = RunsIndex(runs=_ordered([*others, entry]))
            self.store.put_object(_index_key(self.slug), index.model_dump_json(indent=1))
        return entry

