"""Published benchmarks in the artifact store: stored once, read back checked, compared with files.

:func:`publish` stores a frozen record (:func:`~prefect_agentenv.documents.published.snapshot.freeze_benchmark`)
under its slug and version with a create-exclusive write, so of two publishers of one version
exactly one stores it; the other — and anyone later — finds the stored record, and either it has
the same content hash (nothing to do) or the publish is refused with what differs.
:func:`read_published` checks the record against its hashes on every read, on every machine
that reads it (a fleet's workers read the tasks they run from here).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from pydantic import ValidationError

from prefect_agentenv.artifacts import (
    LATEST,
    ArtifactBackend,
    ArtifactError,
    ArtifactIntegrityError,
    ArtifactNotFoundError,
)
from prefect_agentenv.artifacts.keys import check_version
from prefect_agentenv.documents.published.diff import differences, differing_tasks
from prefect_agentenv.documents.published.snapshot import PublishedBenchmark, content_hash, document_hash


class PublishConflictError(ArtifactError):
    """The version is already published with other content; a published version is immutable.

    Attributes:
        published: the stored version.
        tasks: ids of the tasks that differ.
        differences: what differs, one line each (the tasks first).
    """

    def __init__(self, published: PublishedBenchmark, other: PublishedBenchmark) -> None:
        self.published = published
        self.tasks = differing_tasks(published, other)
        self.differences = differences(published, other)
        named = f"; tasks that differ: {', '.join(self.tasks)}" if self.tasks else ""
        super().__init__(f"{published.slug}@{published.version} is already published with other content "
                         f"(sha256 {published.hash[:12]}…, now {other.hash[:12]}…){named}. A published version "
                         "never changes: give the benchmark a new version and publish that")


@dataclass
class Published:
    """What :func:`publish` did."""

    record: PublishedBenchmark
    """The stored record (an earlier one when the content was already published)."""
    stored: bool
    """True when this call stored it; False when the same content was already published."""


def publish(store: ArtifactBackend, record: PublishedBenchmark) -> Published:
    """Store ``record`` under its slug and version unless that version exists.

    Raises:
        PublishConflictError: the version is published with other content.
        ArtifactStoreError: the store failed.
    """
    if store.put_published_benchmark(record.slug, record.version, record.model_dump_json(indent=1).encode()):
        return Published(record, stored=True)
    existing = read_published(store, record.slug, record.version)
    if existing.hash != record.hash:
        raise PublishConflictError(existing, record)
    return Published(existing, stored=False)


@dataclass
class Drift:
    """The files of a benchmark against the version they declare."""

    published: PublishedBenchmark | None
    """That version, None when it is not published."""
    differences: list[str] = field(default_factory=list)
    tasks: list[str] = field(default_factory=list)
    """Ids of the tasks that differ."""
    current_hash: str = ""
    """The content hash of the files, as publishing them now would store it."""

    @property
    def drifted(self) -> bool:
        return self.published is not None and self.published.hash != self.current_hash


def check(store: ArtifactBackend, record: PublishedBenchmark) -> Drift:
    """How the frozen files (``record``) differ from the published version of the same name."""
    try:
        published = read_published(store, record.slug, record.version)
    except ArtifactNotFoundError:
        return Drift(None, current_hash=record.hash)
    if published.hash == record.hash:
        return Drift(published, current_hash=record.hash)
    return Drift(published, differences(published, record), differing_tasks(published, record), record.hash)


def read_published(store: ArtifactBackend, slug: str, version: str = LATEST) -> PublishedBenchmark:
    """One published version (``latest``: the most recently published), checked against its hashes.

    Raises:
        ArtifactNotFoundError: the benchmark or the version is not published.
        ArtifactIntegrityError: the stored record does not match its hashes, or cannot be read.
    """
    if version == LATEST:
        versions = list_published(store, slug)
        if not versions:
            raise ArtifactNotFoundError(f"benchmark {slug!r} has no published version in {store.location}: "
                                        "publish it with `prefect-agentenv publish BENCHMARK_FILE`")
        return versions[-1]
    check_version(version)
    return _parse(store.get_published_benchmark(slug, version), f"{slug}@{version}", store)


def list_published(store: ArtifactBackend, slug: str) -> list[PublishedBenchmark]:
    """Every published version of a benchmark, oldest first (empty when none is)."""
    records = [_parse(store.get_published_benchmark(slug, v), f"{slug}@{v}", store)
               for v in store.list_published_benchmark(slug)]
    return sorted(records, key=lambda r: (r.published_at, r.version))


def _parse(raw: bytes, name: str, store: ArtifactBackend) -> PublishedBenchmark:
    where = f"published benchmark {name} in {store.location}"
    try:
        data = json.loads(raw)
        record = PublishedBenchmark.model_validate(data)
    except (ValueError, ValidationError) as exc:
        raise ArtifactIntegrityError(f"{where} cannot be read: {exc}") from exc
    if content_hash(data) != record.hash:
        raise ArtifactIntegrityError(f"{where} does not match its content hash {record.hash[:12]}…")
    for task in record.tasks:
        if document_hash(task.document) != task.sha256:
            raise ArtifactIntegrityError(f"task {task.task_id!r} of {where} does not match its sha256")
    if f"{record.slug}@{record.version}" != name:
        raise ArtifactIntegrityError(f"{where} holds {record.slug}@{record.version}")
    return record
