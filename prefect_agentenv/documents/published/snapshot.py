"""Published benchmarks: a benchmark frozen as ``slug@version`` in the artifact store.

A benchmark file names its tasks by path, compiles Verial-style tasks, reads seed rows from a
CSV and loads artifacts at their latest version: run it twice and it may run two different
things. Publishing freezes what it runs *now* into one record, stored once under its slug and
version (:meth:`~prefect_agentenv.artifacts.ArtifactBackend.put_published_benchmark`):

* every task as it runs — a file's document, inline steps, a compiled Verial-style task —
  crossed with the seed rows, each with the sha256 a run's snapshot of it will carry;
* the seed rows and the benchmark's settings (epochs, concurrency, defaults, …);
* the version of every artifact a step loads, resolved now (``latest`` at publish time) and
  written into the steps, so a later version of a dataset changes nothing;
* every Harbor task folder kept in the store by content (``documents/harbor/kept_tasks``), so the
  version names no checkout and runs on a machine that has none;
* one sha256 over all of it (:func:`content_hash`), the version's identity.

A stored version is never replaced: publishing the same content again finds it and changes
nothing; other content under that version is refused with what differs
(:mod:`~prefect_agentenv.documents.published.diff`); storing and reading is
:mod:`~prefect_agentenv.documents.published.store`. A run of ``slug@version`` reads the record,
never the files.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from prefect_agentenv.artifacts import (
    LATEST,
    ArtifactBackend,
    ArtifactError,
    ArtifactKind,
    ArtifactMetadata,
    UnsafeKeyError,
)
from prefect_agentenv.attribute_docs import attribute_docstrings
from prefect_agentenv.documents.benchmarks.document import SLUG_PATTERN, BenchmarkHeader
from prefect_agentenv.documents.benchmarks.validation import validate_benchmark_file
from prefect_agentenv.documents.compile import ExpandedTask
from prefect_agentenv.documents.harbor.kept_tasks import has_harbor_tasks, kept_tasks
from prefect_agentenv.documents.models import TaskDocument
from prefect_agentenv.documents.problems import Problem
from prefect_agentenv.documents.seeds import load_seed_rows
from prefect_agentenv.documents.verial.compile import CriterionRef
from prefect_agentenv.exceptions import TaskDocumentError
from prefect_agentenv.jsontypes import JsonObject, canonical_json
from prefect_agentenv.results import PublishedVersion

RECORD_FORMAT = 1
"""Version of the record's layout (not of the benchmark)."""
_UNHASHED = ("hash", "published_at")
"""Members outside the content hash: the hash itself and when the version was stored."""
_REF = re.compile(rf"(?P<slug>{SLUG_PATTERN[1:-1]})@(?P<version>[^@/\\\s]+)")
_TASK_REF = re.compile(rf"{_REF.pattern}/(?P<task>[^/\\]+)")


class _Model(BaseModel):
    # Records written by a later version may carry more members: read what this one knows.
    model_config = ConfigDict(extra="ignore", json_schema_extra=attribute_docstrings)


class PinnedArtifact(_Model):
    """An artifact the benchmark's steps load, at the version resolved when it was published."""

    id: str
    version: str
    """The published version the steps now name (never ``latest``)."""
    kind: ArtifactKind
    written: str
    """The version as the documents named it (``latest`` when they named none)."""
    used_by: list[str] = Field(default_factory=list)
    """``task id/step id`` of every step that loads it."""


class PublishedTask(_Model):
    """One task of the benchmark with one seed row, exactly as a run of the version runs it."""

    task_id: str
    """With ``[seed=N]`` when crossed with the seed rows."""
    base_id: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """Of the canonical JSON of ``document``: the hash a run's snapshot of the task carries."""
    document: JsonObject
    """The task document, its artifact versions pinned."""
    tags: list[str] = Field(default_factory=list)
    timeout_seconds: float
    weight: float = 1.0
    seed_index: int = 0
    seed_row: dict[str, str] | None = None
    criteria: list[CriterionRef] = Field(default_factory=list)
    source: str | None = None
    """The task document file, relative to the benchmark, when the task named one."""

    @classmethod
    def of(cls, task: ExpandedTask) -> PublishedTask:
        document = task.document.model_dump(mode="json", by_alias=True)
        return cls(**task.model_dump(exclude={"document"}), document=document, sha256=document_hash(document))

    def expanded(self) -> ExpandedTask:
        """The task as a benchmark run takes it."""
        return ExpandedTask(**self.model_dump(exclude={"document", "sha256"}),
                            document=TaskDocument.model_validate(self.document))


class PublishedBenchmark(_Model):
    """One published version of a benchmark: everything a run of it needs, and its hash."""

    format: int = RECORD_FORMAT
    slug: str
    version: str
    name: str
    hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    """Hex sha256 of the canonical JSON of every other member but ``published_at``."""
    published_at: datetime
    settings: JsonObject
    """The benchmark without its tasks and seeds: epochs, concurrency, defaults, envs, …"""
    seed_rows: list[dict[str, str]] = Field(default_factory=list)
    tasks: list[PublishedTask] = Field(min_length=1)
    """The tasks it runs: after the tag filter, crossed with the seed rows."""
    artifacts: list[PinnedArtifact] = Field(default_factory=list)

    @property
    def ref(self) -> PublishedVersion:
        return PublishedVersion(slug=self.slug, version=self.version, hash=self.hash)

    def header(self) -> BenchmarkHeader:
        """The benchmark's settings as a run reads them."""
        return BenchmarkHeader.model_validate(self.settings)

    def expanded_tasks(self) -> list[ExpandedTask]:
        return [task.expanded() for task in self.tasks]

    def task(self, task_id: str) -> PublishedTask:
        """Raises: KeyError: the version has no task of that id."""
        for task in self.tasks:
            if task.task_id == task_id:
                return task
        raise KeyError(task_id)


def document_hash(document: Any) -> str:
    """The sha256 a run's snapshot of a task document carries (see ``ResultsStore.snapshot_task``)."""
    return hashlib.sha256(canonical_json(document)).hexdigest()


def content_hash(record: JsonObject) -> str:
    """The sha256 of a record's content: its JSON without ``hash`` and ``published_at``.

    Taken over the JSON as stored, so a reader that knows fewer members still checks all of them.
    """
    return document_hash({k: v for k, v in record.items() if k not in _UNHASHED})


# -- references ---------------------------------------------------------------------------------


def parse_published_ref(text: str) -> tuple[str, str] | None:
    """``(slug, version)`` of ``SLUG@VERSION`` (``VERSION`` may be ``latest``); None for anything else."""
    match = _REF.fullmatch(text.strip())
    return (match["slug"], match["version"]) if match else None


def parse_published_task_ref(text: str) -> tuple[str, str, str] | None:
    """``(slug, version, task id)`` of ``SLUG@VERSION/TASK_ID``, how a fleet's flow runs name a task."""
    match = _TASK_REF.fullmatch(text.strip())
    return (match["slug"], match["version"], match["task"]) if match else None


def task_ref(published: PublishedVersion, task_id: str) -> str:
    return f"{published.slug}@{published.version}/{task_id}"


# -- freezing -----------------------------------------------------------------------------------


@dataclass
class Frozen:
    """A benchmark file frozen into a record (not stored yet), and what the reader should know."""

    record: PublishedBenchmark
    warnings: list[Problem] = field(default_factory=list)


def freeze_benchmark(path: str | Path, store: ArtifactBackend) -> Frozen:
    """Read, validate and expand a benchmark file, pin its artifacts in ``store``, and hash it all.

    Raises:
        TaskDocumentError: the benchmark has problems, or an artifact it loads is not published
            (every problem listed).
    """
    checked = validate_benchmark_file(path)
    if checked.problems or checked.benchmark is None:
        raise TaskDocumentError(checked.problems, str(path))
    bench = checked.benchmark
    rows, _ = load_seed_rows(bench.seeds, Path(path).parent)  # read without problems by the validation
    pins = _Pins(store, _made_artifacts(checked.tasks))
    tasks = [pins.task(task) for task in checked.tasks]
    if pins.problems:
        raise TaskDocumentError(pins.problems, str(path))
    if has_harbor_tasks(tasks):  # kept by content: the version names no checkout, and runs anywhere
        tasks = kept_tasks(store, tasks)
    # What the file says, not this version's defaults: a run re-reads it with BenchmarkHeader.
    settings = bench.model_dump(mode="json", by_alias=True, exclude={"tasks", "seeds"}, exclude_unset=True)
    record = PublishedBenchmark(slug=bench.slug, version=bench.version, name=bench.name, hash="0" * 64,
                                published_at=datetime.now(UTC), settings=settings, seed_rows=[dict(r) for r in rows],
                                tasks=[PublishedTask.of(task) for task in tasks], artifacts=pins.pinned())
    # Hashed in the form it is stored in, so a reader recomputes the same bytes.
    record = record.model_copy(update={"hash": content_hash(record.model_dump(mode="json"))})
    return Frozen(record, list(checked.warnings) + pins.warnings)


def _made_artifacts(tasks: list[ExpandedTask]) -> set[str]:
    """Artifact ids a step of the benchmark publishes (a snapshot, a collection): not pinned."""
    made = set()
    for task in tasks:
        for step in task.document.steps:
            name = type(step).produces_artifact_field
            value = getattr(step, name, None) if name else None
            if isinstance(value, str):
                made.add(value)
    return made


class _Pins:
    """Resolves each artifact a step loads to a published version, once per (id, version)."""

    def __init__(self, store: ArtifactBackend, made: set[str]) -> None:
        self.store, self.made = store, made
        self.found: dict[tuple[str, str], ArtifactMetadata] = {}
        self.users: dict[tuple[str, str], list[str]] = {}
        self.problems: list[Problem] = []
        self.warnings: list[Problem] = []

    def task(self, task: ExpandedTask) -> ExpandedTask:
        steps = [self._step(task.task_id, step) for step in task.document.steps]
        return task.model_copy(update={"document": task.document.model_copy(update={"steps": steps})})

    def _step(self, task_id: str, step: Any) -> Any:
        name = type(step).artifact_field
        artifact_id = getattr(step, name, None) if name else None
        if not isinstance(artifact_id, str):
            return step
        written = step.version or LATEST
        if artifact_id in self.made or "${" in artifact_id + written:
            why = "a step of the benchmark publishes it" if artifact_id in self.made else "it is read at run time"
            self.warnings.append(Problem(f"task {task_id!r}: artifact {artifact_id}@{written} is not pinned: {why}",
                                         step_id=step.id, severity="warning"))
            return step
        meta = self._resolve(task_id, step.id, artifact_id, written)
        if meta is None:
            return step
        self.users.setdefault((artifact_id, written), []).append(f"{task_id}/{step.id}")
        return step.model_copy(update={"version": meta.version})

    def _resolve(self, task_id: str, step_id: str, artifact_id: str, written: str) -> ArtifactMetadata | None:
        key = (artifact_id, written)
        if key not in self.found:
            try:
                self.found[key] = self.store.get_metadata(artifact_id, written)
            except (ArtifactError, UnsafeKeyError) as exc:
                self.problems.append(Problem(
                    f"task {task_id!r}: artifact {artifact_id}@{written} cannot be pinned: {exc}", step_id=step_id,
                    hint=f"publish it first (prefect-agentenv artifact put {artifact_id} ...), or fix the id"))
                return None
        return self.found[key]

    def pinned(self) -> list[PinnedArtifact]:
        return [PinnedArtifact(id=meta.id, version=meta.version, kind=meta.kind, written=written,
                               used_by=self.users.get((artifact_id, written), []))
                for (artifact_id, written), meta in sorted(self.found.items())]
