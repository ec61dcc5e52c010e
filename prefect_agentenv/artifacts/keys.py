"""Store keys derived from document values, and the checks that keep them inside the store.

Artifact ids, versions, file names and record keys come from task documents and the command
line. Every such value is checked here before a key is built from it, so a key can never leave
the store's prefix (or root folder) whatever the document says. Backends only see checked keys.

Layout under the store's prefix::

    artifacts/<id>/<version>/claim.json        written first, if absent: reserves the version
    artifacts/<id>/<version>/files/<name>      the artifact's files
    artifacts/<id>/<version>/meta.json         written last: the version is published
    benchmarks/<slug>/<version>.json           a published benchmark version, written once
    runs/<key>                                 run records (trajectories, turns, reports)
"""

from __future__ import annotations

from prefect_agentenv.exceptions import ArtifactError

ARTIFACTS_AREA = "artifacts"
BENCHMARKS_AREA = "benchmarks"
RUNS_AREA = "runs"
LATEST = "latest"
"""The version name that resolves to the newest published version."""

# 255 bytes is the longest file name on common local filesystems; 1024 bytes is S3's key limit.
MAX_SEGMENT_BYTES = 255
MAX_KEY_BYTES = 1024


class UnsafeKeyError(ArtifactError, ValueError):
    """A value taken from a document would build a key outside the store, or an invalid one.

    Also a ``ValueError``, so pydantic validators that call the checks report it as a field error.
    """


def _reject(what: str, value: str, why: str) -> UnsafeKeyError:
    return UnsafeKeyError(f"{what} {value!r} {why}: keys taken from documents must stay inside the store")


def check_segment(value: str, what: str) -> str:
    """Check one key segment (a folder or file name, never a path) and return it unchanged.

    Raises:
        UnsafeKeyError: the segment is empty, ``.``/``..``, holds a ``/``, ``\\``, NUL or
            another control character, or is too long.
    """
    if not isinstance(value, str) or value == "":
        raise _reject(what, str(value), "is empty")
    if value in (".", ".."):
        raise _reject(what, value, "is a relative reference ('.' or '..')")
    if "/" in value:
        raise _reject(what, value, "contains '/'")
    if "\\" in value:
        raise _reject(what, value, "contains a backslash")
    if "\x00" in value:
        raise _reject(what, value, "contains a NUL character")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise _reject(what, value, "contains a control character")
    if len(value.encode()) > MAX_SEGMENT_BYTES:
        raise _reject(what, value, f"is longer than {MAX_SEGMENT_BYTES} bytes")
    return value


def check_path(value: str, what: str = "file name") -> str:
    """Check a relative path such as ``reports/q3.png`` and return it unchanged.

    Raises:
        UnsafeKeyError: the path is absolute, has an empty, ``.`` or ``..`` segment, or a
            segment fails :func:`check_segment`.
    """
    if not isinstance(value, str) or value == "":
        raise _reject(what, str(value), "is empty")
    if value.startswith("/"):
        raise _reject(what, value, "is an absolute path")
    if "\\" in value:
        # Checked on the whole value first so the message names the backslash, not a segment.
        raise _reject(what, value, "contains a backslash")
    segments = value.split("/")
    if "" in segments:
        raise _reject(what, value, "has an empty path segment ('//' or a trailing '/')")
    if any(s in (".", "..") for s in segments):
        raise _reject(what, value, "has a '.' or '..' segment")
    for segment in segments:
        check_segment(segment, what)
    if len(value.encode()) > MAX_KEY_BYTES:
        raise _reject(what, value, f"is longer than {MAX_KEY_BYTES} bytes")
    return value


def check_id(value: str, what: str = "artifact id") -> str:
    """Check an artifact id: one segment without ``@`` (which separates ``ID@VERSION``)."""
    check_segment(value, what)
    if "@" in value:
        raise _reject(what, value, "contains '@' (reserved for ID@VERSION)")
    return value


def check_version(value: str, *, allow_latest: bool = False) -> str:
    """Check a version name; ``latest`` is a reference, never the name of a stored version."""
    check_id(value, "version")
    if value == LATEST and not allow_latest:
        raise UnsafeKeyError(f"'{LATEST}' names the newest version and cannot be published as a version")
    return value


def check_prefix(value: str | None) -> str:
    """Normalise a store prefix (``a/b/``, ``/a/b`` → ``a/b``; empty stays empty) after checking it."""
    value = (value or "").strip("/")
    if value:
        check_path(value, "store prefix")
    return value


def version_folder(artifact_id: str, version: str) -> str:
    """Folder of one version; the caller has checked both values."""
    return f"{ARTIFACTS_AREA}/{artifact_id}/{version}"


def artifact_folder(artifact_id: str) -> str:
    return f"{ARTIFACTS_AREA}/{check_id(artifact_id)}"


def claim_key(artifact_id: str, version: str) -> str:
    return f"{version_folder(artifact_id, version)}/claim.json"


def meta_key(artifact_id: str, version: str) -> str:
    return f"{version_folder(artifact_id, version)}/meta.json"


def file_key(artifact_id: str, version: str, name: str) -> str:
    return f"{version_folder(artifact_id, version)}/files/{check_path(name)}"


def benchmark_folder(slug: str) -> str:
    """Folder of a benchmark's published versions."""
    return f"{BENCHMARKS_AREA}/{check_id(slug, 'benchmark slug')}"


def published_benchmark_key(slug: str, version: str) -> str:
    """Key of one published version of a benchmark (``latest`` is a reference, never stored)."""
    return f"{benchmark_folder(slug)}/{check_version(version)}.json"


def record_key(key: str) -> str:
    """Key of a run record; ``key`` is relative to the runs area (``<run id>/trajectory.json``)."""
    return f"{RUNS_AREA}/{check_path(key, 'record key')}"


def split_ref(text: str) -> tuple[str, str]:
    """Split ``ID[@VERSION]`` into its id and version (``latest`` when omitted), both checked."""
    artifact_id, sep, version = text.partition("@")
    if sep and not version:
        raise UnsafeKeyError(f"{text!r} ends with '@': write ID@VERSION, or ID for the latest version")
    return check_id(artifact_id), check_version(version or LATEST, allow_latest=True)
