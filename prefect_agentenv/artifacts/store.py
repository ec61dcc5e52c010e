"""The artifact store interface: versioned artifacts and run records over a flat object namespace.

A backend (local folder, S3 bucket) provides five primitives on checked, store-relative keys.
Everything else — version numbers, immutability, content hashes, universes, downloads — lives
here, so both backends behave the same and one test suite covers them.

The API is synchronous (boto3 is); async callers use ``asyncio.to_thread``. A backend instance
is safe to share between threads.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Self

from pydantic import ValidationError

from prefect_agentenv.artifacts import keys
from prefect_agentenv.artifacts.keys import LATEST, UnsafeKeyError, check_id, check_path, check_version
from prefect_agentenv.artifacts.models import ArtifactFile, ArtifactKind, ArtifactMetadata, ArtifactRef
from prefect_agentenv.exceptions import ArtifactError, ProtocolError

logger = logging.getLogger("prefect_agentenv.artifacts")

FileSource = bytes | Path
"""The content of a file to publish: bytes, or a path to read them from."""

# Concurrent publishers without a version race for the next number; each loser moves on.
_VERSION_ATTEMPTS = 20
_INTEGER_VERSION = re.compile(r"[1-9][0-9]*")
TMP_PREFIX = ".agentenv-tmp-"
"""Name prefix of temporary files next to their target; listings skip them."""


class ArtifactNotFoundError(ArtifactError):
    """No such artifact, version, file or run record."""


class ArtifactConflictError(ArtifactError):
    """A version is already published with other content (published versions are immutable)."""


class ArtifactIntegrityError(ArtifactError):
    """Stored bytes or metadata do not match what was published."""


class ArtifactStoreError(ArtifactError, ProtocolError):
    """The store failed or could not be reached (bucket missing, access denied, I/O error)."""


class _VersionTaken(Exception):
    """Another publisher claimed the version number first."""


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _version_order(meta: ArtifactMetadata) -> tuple[datetime, int, int, str]:
    numeric = _INTEGER_VERSION.fullmatch(meta.version)
    return (meta.created_at, 0 if numeric else 1, int(meta.version) if numeric else 0, meta.version)


class ArtifactBackend(ABC):
    """Versioned artifacts and run records in one store.

    Subclasses implement the primitives ``_get``, ``_put``, ``_exists``, ``_list`` and ``_url``
    on keys relative to the store; keys reach them already checked by :mod:`.keys`.
    """

    record_filter: Callable[[bytes | str], bytes | str] | None = None
    """Applied to every run record before it is stored (a run sets its secret redaction here)."""

    # -- primitives ---------------------------------------------------------------------------

    @property
    @abstractmethod
    def location(self) -> str:
        """Where the store is (``s3://bucket/prefix`` or a folder), for messages."""

    @abstractmethod
    def _get(self, key: str) -> bytes:
        """Bytes of an object; raises :class:`ArtifactNotFoundError` when there is none."""

    @abstractmethod
    def _put(self, key: str, data: bytes, *, if_absent: bool = False) -> bool:
        """Write an object atomically; with ``if_absent``, only when none exists (False if one did)."""

    @abstractmethod
    def _exists(self, key: str) -> bool: ...

    @abstractmethod
    def _list(self, folder: str, *, recursive: bool = False) -> list[str]:
        """Names directly under ``folder`` (files and sub-folders), or every key below it.

        Returned names are relative to ``folder``; an absent folder lists as empty.
        """

    @abstractmethod
    def _url(self, key: str) -> str:
        """Address of an object for reports: ``s3://bucket/key`` or ``file:///…``."""

    def browser_url(self, url: str) -> str | None:
        """An address of one of this store's objects that a browser can open (a presigned URL), or
        None when the store has none to give (a local folder: the UI cannot open ``file://``)."""
        return None

    def close(self) -> None:
        """Release connections; the default backend holds none."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- publishing ---------------------------------------------------------------------------

    def publish_files(self, artifact_id: str, files: Mapping[str, FileSource], *,
                      version: str | None = None) -> ArtifactMetadata:
        """Publish a file artifact: ``files`` maps names (relative paths) to their content.

        Args:
            artifact_id: id of the artifact.
            files: at least one file; names become the paths the files are downloaded to.
            version: the version to publish; the next integer version when omitted.

        Raises:
            ArtifactConflictError: ``version`` is already published with other content.
            UnsafeKeyError: an id, version or file name would leave the store.
        """
        return self._publish(artifact_id, "file", files, version=version)

    def publish_environment(self, artifact_id: str, environment_name: str, name: str, data: FileSource, *,
                            version: str | None = None) -> ArtifactMetadata:
        """Publish an environment artifact: one file of seed data for the env ``environment_name``."""
        return self._publish(artifact_id, "environment", {name: data}, version=version,
                             environment_name=environment_name)

    def publish_universe(self, artifact_id: str, members: Iterable[ArtifactRef | str], *,
                         version: str | None = None) -> ArtifactMetadata:
        """Publish a universe of file artifacts; each member is pinned to the version it resolves to now.

        Raises:
            ArtifactNotFoundError: a member is not published.
            ArtifactError: a member is not a file artifact.
        """
        pinned: list[ArtifactRef] = []
        for member in members:
            ref = member if isinstance(member, ArtifactRef) else ArtifactRef.parse(member)
            meta = self.get_metadata(ref.id, ref.version)
            if meta.kind != "file":
                raise ArtifactError(f"universe member {meta.ref} is not a file artifact (kind: {meta.kind})")
            pinned.append(meta.ref)
        return self._publish(artifact_id, "universe", {}, version=version, members=tuple(pinned))

    def _publish(self, artifact_id: str, kind: ArtifactKind, files: Mapping[str, FileSource], *,
                 version: str | None, environment_name: str | None = None,
                 members: tuple[ArtifactRef, ...] = ()) -> ArtifactMetadata:
        check_id(artifact_id)
        payloads = {check_path(name): _read_source(source) for name, source in files.items()}
        entries = tuple(ArtifactFile(name=n, sha256=sha256_hex(d), size=len(d)) for n, d in sorted(payloads.items()))

        def record(v: str) -> ArtifactMetadata:
            try:
                return ArtifactMetadata(id=artifact_id, version=v, kind=kind, environment_name=environment_name,
                                        files=entries, members=members, created_at=datetime.now(UTC))
            except ValidationError as exc:
                raise ArtifactError(f"cannot publish {artifact_id}: {_first_error(exc)}") from exc

        if version is not None:
            return self._commit(record(check_version(version)), payloads, numbered=False)
        for _ in range(_VERSION_ATTEMPTS):
            try:
                return self._commit(record(self._next_version(artifact_id)), payloads, numbered=True)
            except _VersionTaken:
                continue
        raise ArtifactStoreError(f"no free version of {artifact_id} after {_VERSION_ATTEMPTS} attempts: "
                                 "too many concurrent publishers", url=self.location)

    def _commit(self, meta: ArtifactMetadata, payloads: Mapping[str, bytes], *, numbered: bool) -> ArtifactMetadata:
        """Claim the version, write the files, then the metadata that makes the version visible.

        Only a publisher holding the claim, or one with identical content, ever writes files, so
        two publishers racing for one version cannot mix their files.
        """
        claim = keys.claim_key(meta.id, meta.version)
        if not self._put(claim, _dump(meta), if_absent=True):
            if numbered:
                raise _VersionTaken
            existing = self._parse_meta(self._get(claim), claim)
            if not existing.same_content(meta):
                raise ArtifactConflictError(
                    f"{meta.ref} is already published (or being published) with other content; a published "
                    "version is immutable: publish a new version (omit the version to get the next number)")
            # Same content: a repeat publish, or a retry finishing an interrupted one.
            meta = existing
            if self._exists(keys.meta_key(meta.id, meta.version)):
                return meta
        for entry in meta.files:
            self._put(keys.file_key(meta.id, meta.version, entry.name), payloads[entry.name])
        self._put(keys.meta_key(meta.id, meta.version), _dump(meta))
        logger.debug("published %s to %s", meta.ref, self.location)
        return meta

    def _next_version(self, artifact_id: str) -> str:
        # Every claimed folder counts, published or not, so an interrupted publish is never reused.
        numbers = [int(v) for v in self._list(keys.artifact_folder(artifact_id)) if _INTEGER_VERSION.fullmatch(v)]
        return str(max(numbers, default=0) + 1)

    # -- reading ------------------------------------------------------------------------------

    def get_metadata(self, artifact_id: str, version: str = LATEST) -> ArtifactMetadata:
        """The record of one published version (``latest``: the most recently published).

        Raises:
            ArtifactNotFoundError: no such artifact or version.
        """
        check_id(artifact_id)
        check_version(version, allow_latest=True)
        if version == LATEST:
            published = self.list_versions(artifact_id)
            if not published:
                raise ArtifactNotFoundError(f"artifact {artifact_id!r} is not published in {self.location}")
            return published[-1]
        try:
            return self._load_meta(artifact_id, version)
        except ArtifactNotFoundError:
            known = ", ".join(m.version for m in self.list_versions(artifact_id)) or "none"
            raise ArtifactNotFoundError(
                f"artifact {artifact_id}@{version} is not published in {self.location} (versions: {known})"
            ) from None

    def list_ids(self) -> list[str]:
        """Ids of every artifact with at least one claimed version, sorted."""
        return sorted(n for n in self._list(keys.ARTIFACTS_AREA) if _is_valid_id(n))

    def list_versions(self, artifact_id: str) -> list[ArtifactMetadata]:
        """Every published version of an artifact, oldest first (empty when there is none)."""
        published: list[ArtifactMetadata] = []
        for version in self._list(keys.artifact_folder(artifact_id)):
            if not _is_valid_id(version):
                continue
            try:
                published.append(self._load_meta(artifact_id, version))
            except ArtifactNotFoundError:
                continue  # claimed but not (yet) published
        return sorted(published, key=_version_order)

    def read_file(self, artifact: str | ArtifactMetadata, name: str | None = None, *,
                  version: str = LATEST) -> bytes:
        """Bytes of one file, checked against its sha256.

        Args:
            artifact: an artifact id (resolved with ``version``) or a record already in hand.
            name: the file; may be omitted when the artifact holds exactly one.
            version: used with an id only.

        Raises:
            ArtifactNotFoundError: no such artifact, version or file.
            ArtifactIntegrityError: the stored bytes do not match the recorded hash.
        """
        meta = self._resolve(artifact, version)
        return self._read_verified(meta, self._pick(meta, name))

    def file_url(self, artifact: str | ArtifactMetadata, name: str | None = None, *, version: str = LATEST) -> str:
        """The object URL of one file (``s3://…`` or ``file:///…``), for reports."""
        meta = self._resolve(artifact, version)
        entry = self._pick(meta, name)
        return self._url(keys.file_key(meta.id, meta.version, entry.name))

    def file_urls(self, artifact: str | ArtifactMetadata, *, version: str = LATEST) -> dict[str, str]:
        """The object URL of every file of a file or environment artifact, by file name."""
        meta = self._resolve(artifact, version)
        return {f.name: self._url(keys.file_key(meta.id, meta.version, f.name)) for f in meta.files}

    def download(self, artifact: str | ArtifactMetadata, dest: Path, *, version: str = LATEST) -> list[Path]:
        """Write an artifact's files under ``dest`` (created if needed) and return their paths.

        A universe writes the files of all its members into ``dest`` side by side, as a sandbox
        expects them; two members with one file name and different content are a conflict.

        Raises:
            ArtifactConflictError: two universe members disagree on a file.
            UnsafeKeyError: a file would land outside ``dest`` (for instance through a symlink).
            ArtifactError: a file cannot be written under ``dest``.
        """
        meta = self._resolve(artifact, version)
        owners = [self.get_metadata(m.id, m.version) for m in meta.members] if meta.kind == "universe" else [meta]
        chosen: dict[str, tuple[ArtifactMetadata, ArtifactFile]] = {}
        for owner in owners:
            for entry in owner.files:
                previous = chosen.get(entry.name)
                if previous and previous[1].sha256 != entry.sha256:
                    raise ArtifactConflictError(
                        f"universe {meta.ref}: members {previous[0].ref} and {owner.ref} both hold "
                        f"{entry.name!r} with different content")
                chosen.setdefault(entry.name, (owner, entry))
        dest = Path(dest)
        dest.mkdir(parents=True, exist_ok=True)
        root = dest.resolve()
        written: list[Path] = []
        for name, (owner, entry) in sorted(chosen.items()):
            target = dest.joinpath(*name.split("/"))
            if not target.resolve().is_relative_to(root):
                raise UnsafeKeyError(f"file {name!r} of {owner.ref} would be written outside {dest}")
            data = self._read_verified(owner, entry)
            try:
                write_atomically(target, data)
            except OSError as exc:
                raise ArtifactError(f"cannot write {target}: {exc.strerror or exc}") from exc
            written.append(target)
        return written

    def _resolve(self, artifact: str | ArtifactMetadata, version: str) -> ArtifactMetadata:
        return artifact if isinstance(artifact, ArtifactMetadata) else self.get_metadata(artifact, version)

    def _pick(self, meta: ArtifactMetadata, name: str | None) -> ArtifactFile:
        if name is None:
            if len(meta.files) != 1:
                raise ArtifactError(f"{meta.ref} holds {len(meta.files)} files: name the one to read")
            return meta.files[0]
        entry = meta.find_file(check_path(name))
        if entry is None:
            listed = ", ".join(f.name for f in meta.files) or "none"
            raise ArtifactNotFoundError(f"{meta.ref} has no file {name!r} (files: {listed})")
        return entry

    def _read_verified(self, meta: ArtifactMetadata, entry: ArtifactFile) -> bytes:
        key = keys.file_key(meta.id, meta.version, entry.name)
        try:
            data = self._get(key)
        except ArtifactNotFoundError:
            raise ArtifactIntegrityError(f"file {entry.name!r} of {meta.ref} is missing from the store") from None
        digest = sha256_hex(data)
        if digest != entry.sha256 or len(data) != entry.size:
            raise ArtifactIntegrityError(
                f"file {entry.name!r} of {meta.ref} does not match its record: sha256 {digest} "
                f"({len(data)} bytes), expected {entry.sha256} ({entry.size} bytes)")
        return data

    def _load_meta(self, artifact_id: str, version: str) -> ArtifactMetadata:
        key = keys.meta_key(artifact_id, version)
        meta = self._parse_meta(self._get(key), key)
        if (meta.id, meta.version) != (artifact_id, version):
            raise ArtifactIntegrityError(f"{self._url(key)} describes {meta.ref}, not {artifact_id}@{version}")
        return meta

    def _parse_meta(self, raw: bytes, key: str) -> ArtifactMetadata:
        try:
            return ArtifactMetadata.model_validate_json(raw)
        except ValidationError as exc:
            raise ArtifactIntegrityError(
                f"{self._url(key)} is not a valid artifact record: {_first_error(exc)}") from exc

    # -- published benchmarks -----------------------------------------------------------------

    def put_published_benchmark(self, slug: str, version: str, data: bytes) -> bool:
        """Store one published version of a benchmark, unless the version exists.

        The write is create-exclusive (a hard link locally, ``If-None-Match: *`` on S3), so of two
        writers of one version exactly one wins and nothing ever replaces a stored version.

        Returns:
            True when this call stored it; False when the version was already stored (with
            whatever content: read it to compare).
        """
        return self._put(keys.published_benchmark_key(slug, version), data, if_absent=True)

    def get_published_benchmark(self, slug: str, version: str) -> bytes:
        """The stored bytes of one published version of a benchmark.

        Raises:
            ArtifactNotFoundError: the version is not published (the message lists those that are).
        """
        try:
            return self._get(keys.published_benchmark_key(slug, version))
        except ArtifactNotFoundError:
            known = ", ".join(self.list_published_benchmark(slug)) or "none"
            raise ArtifactNotFoundError(f"benchmark {slug}@{version} is not published in {self.location} "
                                        f"(published versions: {known})") from None

    def list_published_benchmark(self, slug: str) -> list[str]:
        """The published versions of a benchmark, as stored (unordered: the records carry their dates)."""
        names = self._list(keys.benchmark_folder(slug))
        return [n.removesuffix(".json") for n in names if n.endswith(".json") and not n.startswith(TMP_PREFIX)]

    # -- run records --------------------------------------------------------------------------

    def put_object(self, key: str, data: bytes | str) -> str:
        """Store a run record (trajectory, conversation turn, report) and return its URL; ``key`` is relative
        to the runs area (``<run id>/trajectories/reply.json``), and a record is overwritten in place."""
        full = keys.record_key(key)
        if self.record_filter is not None:
            data = self.record_filter(data)
        self._put(full, data.encode() if isinstance(data, str) else data)
        return self._url(full)

    def append_object(self, key: str, data: bytes) -> str:
        """Add ``data`` (whole lines) to the end of a run record and return its URL.

        A store that can append in place (a local folder) does; others rewrite the record whole.
        """
        full = keys.record_key(key)
        if self.record_filter is not None:
            filtered = self.record_filter(data)
            data = filtered.encode() if isinstance(filtered, str) else filtered
        self._append(full, data)
        return self._url(full)

    def _append(self, key: str, data: bytes) -> None:
        """Read-modify-write: an object store has no append (a local folder overrides this)."""
        try:
            existing = self._get(key)
        except ArtifactNotFoundError:
            existing = b""
        if existing and not existing.endswith(b"\n"):
            existing += b"\n"
        self._put(key, existing + data)

    def get_object(self, key: str) -> bytes:
        """Bytes of a run record.

        Raises:
            ArtifactNotFoundError: there is no such record.
        """
        full = keys.record_key(key)
        try:
            return self._get(full)
        except ArtifactNotFoundError:
            raise ArtifactNotFoundError(f"no run record {key!r} in {self.location}") from None

    def object_url(self, key: str) -> str:
        """URL of a run record."""
        return self._url(keys.record_key(key))

    def key_of(self, url: str | None) -> str | None:
        """The run-record key of a URL this store gave out (:meth:`put_object`); None for another store's."""
        prefix = self.object_url("x")[:-1]
        return url[len(prefix):] if url and url.startswith(prefix) else None

    def list_objects(self, folder: str = "") -> list[str]:
        """Keys of the run records under ``folder`` of the runs area (relative to it), sorted."""
        base = keys.record_key(folder) if folder else keys.RUNS_AREA
        found = self._list(base, recursive=True)
        return sorted(f"{folder}/{k}" if folder else k for k in found)


def _read_source(source: FileSource) -> bytes:
    if isinstance(source, bytes):
        return source
    if not isinstance(source, Path):
        # A str could be content or a path; guessing wrong would publish the wrong thing.
        raise TypeError(f"file content must be bytes or a Path, not {type(source).__name__}")
    try:
        return Path(source).read_bytes()
    except OSError as exc:
        raise ArtifactError(f"cannot read {source}: {exc.strerror or exc}") from exc


def _dump(meta: ArtifactMetadata) -> bytes:
    return meta.model_dump_json(indent=2).encode()


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error["loc"])
    message = error["msg"].removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def _is_valid_id(name: str) -> bool:
    try:
        check_id(name)
    except UnsafeKeyError:
        return False
    return True


def write_atomically(target: Path, data: bytes) -> None:
    """Write through a temporary file in the same folder, so a reader never sees half a file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=TMP_PREFIX)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
