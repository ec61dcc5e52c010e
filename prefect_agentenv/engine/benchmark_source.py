"""Where a benchmark run's tasks come from: a file, a document, or a published version.

A file (or a document) is validated and expanded as it is now. A published version
(``SLUG@VERSION``, ``SLUG@latest``; ``prefect-agentenv publish``) is read from the artifact
store, checked against its hashes, and runs exactly as it was frozen, whatever the files say
today. Both the benchmark flow's ``path`` and its ``benchmark`` parameter take either form;
a string names a published version when it reads ``SLUG@VERSION`` and no file has that name.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from prefect_agentenv.artifacts import ArtifactNotFoundError, get_artifact_store
from prefect_agentenv.documents.benchmarks.document import Benchmark, BenchmarkHeader
from prefect_agentenv.documents.benchmarks.validation import (
    BenchmarkValidationResult,
    validate_benchmark_data,
    validate_benchmark_file,
)
from prefect_agentenv.documents.compile import ExpandedTask
from prefect_agentenv.documents.harbor.kept_tasks import has_harbor_tasks, kept_tasks
from prefect_agentenv.documents.loading import ParseError, read_document
from prefect_agentenv.documents.problems import Problem
from prefect_agentenv.documents.published.snapshot import PublishedBenchmark, parse_published_ref
from prefect_agentenv.documents.published.store import read_published
from prefect_agentenv.exceptions import TaskDocumentError
from prefect_agentenv.jsontypes import JsonObject, JsonValue
from prefect_agentenv.results import PublishedVersion
from prefect_agentenv.results.store.run_store import RunEntry


@dataclass(frozen=True)
class BenchmarkSource:
    """The benchmark's settings and the tasks a run of it runs."""

    header: BenchmarkHeader
    tasks: list[ExpandedTask]
    published: PublishedBenchmark | None = None
    """The published version the tasks come from; None for files or a document as they are."""

    @property
    def ref(self) -> PublishedVersion | None:
        return self.published.ref if self.published is not None else None

    def document_json(self, task: ExpandedTask) -> JsonObject:
        """The task's document as its snapshot stores it: a published task's exactly as published, so
        its hash is the published one whatever this version of the package would write."""
        if self.published is not None:
            try:
                return self.published.task(task.task_id).document
            except KeyError:
                pass
        return task.document.model_dump(mode="json", by_alias=True)


_handed_over: ContextVar[tuple[str, tuple[int, int], BenchmarkValidationResult] | None] = ContextVar(
    "agentenv_validated_benchmark", default=None)
"""A benchmark file the command validated, for the flow it starts in the same process."""


def hand_over(path: str, result: BenchmarkValidationResult) -> None:
    """Let the benchmark flow this process starts use ``result`` instead of reading ``path`` again.

    ``bench`` validates the file before it starts anything (exit 2 lists the problems); without this,
    the flow read and validated it again, and its run name read it a third time. The file's size and
    modification time are kept with it, so a file changed in between is read again."""
    _handed_over.set((path, _signature(path), result))


def _validated(path: str) -> BenchmarkValidationResult:
    held = _handed_over.get()
    if held is not None and held[0] == path and held[1] == _signature(path):
        return held[2]
    return validate_benchmark_file(path)


def _signature(path: str) -> tuple[int, int]:
    try:
        stat = Path(path).stat()
    except OSError:
        return (-1, -1)
    return (stat.st_mtime_ns, stat.st_size)


def published_ref_of(text: str) -> tuple[str, str] | None:
    """``(slug, version)`` when ``text`` names a published version rather than a file."""
    ref = parse_published_ref(text)
    return ref if ref is not None and not Path(text).exists() else None


def load_source(benchmark: Benchmark | str | None, path: str | None) -> BenchmarkSource:
    """The benchmark and its expanded tasks: every problem listed at once.

    ``path`` wins over ``benchmark`` when both are given (a deployment's default is one of them,
    the run's own choice the other).

    Raises:
        TaskDocumentError: the document is invalid, or the published version cannot be read.
    """
    text = path or (benchmark if isinstance(benchmark, str) else None)
    if text:
        ref = published_ref_of(text)
        return _published(*ref) if ref else _from_file(text)
    if isinstance(benchmark, Benchmark):
        data = benchmark.model_dump(mode="json", by_alias=True, exclude_none=True)
        result = validate_benchmark_data(data, ".")
        if result.problems or result.benchmark is None:
            raise TaskDocumentError(result.problems, "benchmark")
        return BenchmarkSource(result.benchmark, result.tasks)
    raise TaskDocumentError([], "give a benchmark document, the path of one, or a published version SLUG@VERSION")


def _from_file(path: str) -> BenchmarkSource:
    """The file's benchmark; its Harbor task folders kept by content in the store, so the run's snapshots
    name no checkout (``documents/harbor/kept_tasks``)."""
    result = _validated(path)
    if result.problems or result.benchmark is None:
        raise TaskDocumentError(result.problems, path)
    tasks = result.tasks
    if has_harbor_tasks(tasks):
        with get_artifact_store() as store:
            tasks = kept_tasks(store, tasks)
    return BenchmarkSource(result.benchmark, tasks)


def _published(slug: str, version: str) -> BenchmarkSource:
    """A published version, read and checked; an unknown one is a user mistake with the known versions."""
    try:
        with get_artifact_store() as store:
            record = read_published(store, slug, version)
    except ArtifactNotFoundError as exc:
        raise TaskDocumentError([Problem(str(exc), hint="publish it: prefect-agentenv publish BENCHMARK_FILE")],
                                f"{slug}@{version}") from None
    return BenchmarkSource(record.header(), record.expanded_tasks(), record)


def slug_of(value: JsonValue | Benchmark) -> str | None:
    """The slug of a benchmark parameter (a document, a published version or a file), for the run's
    name only: a file that cannot be read is reported by the run itself."""
    if isinstance(value, Benchmark):
        return value.slug
    if isinstance(value, dict):
        slug = value.get("slug")
        return slug if isinstance(slug, str) else None
    if not isinstance(value, str) or not value:
        return None
    ref = published_ref_of(value)
    if ref is not None:
        return f"{ref[0]}@{ref[1]}"
    held = _handed_over.get()
    if held is not None and held[0] == value and held[2].benchmark is not None:
        return held[2].benchmark.slug
    try:
        data = read_document(Path(value))
    except (OSError, ParseError, UnicodeDecodeError):
        return None
    slug = data.get("slug") if isinstance(data, dict) else None
    return slug if isinstance(slug, str) else None


def with_source(markdown: str, current: PublishedVersion | None, previous: RunEntry | None) -> str:
    """The summary with what ran under its title: the published version and hash, and whether the
    run it is compared with ran the same one (a comparison across versions compares other tasks)."""
    lines = []
    if current is not None:
        lines.append(f"**Published version** `{current}` (sha256 `{current.hash[:12]}…`): the tasks as "
                     "`prefect-agentenv publish` froze them.")
    if previous is not None and previous.published != current:
        before = f"`{previous.published}`" if previous.published else "the benchmark's files as they were then"
        lines.append(f"The run compared with ({previous.run_id}) ran {before}: its tasks may differ from these.")
    if not lines:
        return markdown
    title, _, body = markdown.partition("\n\n")
    return "\n\n".join([title, *lines, body])
