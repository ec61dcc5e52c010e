"""The local-folder artifact store: the embedded default when no ArtifactStore block is set."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import BinaryIO

from prefect_agentenv.artifacts.keys import UnsafeKeyError
from prefect_agentenv.artifacts.store import (
    TMP_PREFIX,
    ArtifactBackend,
    ArtifactNotFoundError,
    ArtifactStoreError,
    write_atomically,
)


class LocalArtifactBackend(ArtifactBackend):
    """Artifacts and run records as files under one folder (created on first write).

    Writes go through a temporary file and a rename, so readers never see half a file;
    claims use a hard link, which fails atomically when the target exists.
    """

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root).expanduser().resolve()

    def __repr__(self) -> str:
        return f"LocalArtifactBackend({str(self.root)!r})"

    @property
    def location(self) -> str:
        return str(self.root)

    def _path(self, key: str) -> Path:
        path = self.root.joinpath(*key.split("/"))
        # Keys are checked already; this also refuses symlinks planted inside the store.
        if not path.resolve().is_relative_to(self.root):
            raise UnsafeKeyError(f"key {key!r} resolves outside the store {self.root}")
        return path

    def _get(self, key: str) -> bytes:
        path = self._path(key)
        try:
            return path.read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise ArtifactNotFoundError(f"{path} does not exist") from None
        except OSError as exc:
            raise ArtifactStoreError(f"cannot read {path}: {exc.strerror or exc}", url=path.as_uri()) from exc

    def _put(self, key: str, data: bytes, *, if_absent: bool = False) -> bool:
        path = self._path(key)
        try:
            if not if_absent:
                write_atomically(path, data)
                return True
            return self._put_if_absent(path, data)
        except OSError as exc:
            raise ArtifactStoreError(f"cannot write {path}: {exc.strerror or exc}", url=path.as_uri()) from exc

    def _append(self, key: str, data: bytes) -> None:
        """Append in place, so a run's N results cost N lines written, not N² bytes.

        Opened in append mode, so a write lands at the end; see :func:`_end_last_line` for a file
        a crash left without its final newline.
        """
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a+b") as handle:
                _end_last_line(handle)
                handle.write(data)
        except OSError as exc:
            raise ArtifactStoreError(f"cannot write {path}: {exc.strerror or exc}", url=path.as_uri()) from exc

    @staticmethod
    def _put_if_absent(path: Path, data: bytes) -> bool:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=TMP_PREFIX)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.link(tmp, path)
            return True
        except FileExistsError:
            return False
        finally:
            Path(tmp).unlink(missing_ok=True)

    def _exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def _list(self, folder: str, *, recursive: bool = False) -> list[str]:
        base = self._path(folder)
        try:
            if not base.is_dir():
                return []
            if not recursive:
                return [p.name for p in base.iterdir() if not p.name.startswith(TMP_PREFIX)]
            return [p.relative_to(base).as_posix() for p in base.rglob("*")
                    if p.is_file() and not p.name.startswith(TMP_PREFIX)]
        except OSError as exc:
            raise ArtifactStoreError(f"cannot list {base}: {exc.strerror or exc}", url=base.as_uri()) from exc

    def _url(self, key: str) -> str:
        return self._path(key).as_uri()


def _end_last_line(handle: BinaryIO) -> None:
    """Make an open JSON-lines file end with a newline before an append.

    A last line that is whole JSON (written without its newline) gets one; a line torn by a
    crash mid-append is truncated away: its result was never recorded, a resume runs it again.
    """
    size = handle.seek(0, os.SEEK_END)
    if not size:
        return
    handle.seek(size - 1)
    if handle.read(1) == b"\n":
        return
    handle.seek(0)
    body = handle.read()
    start = body.rfind(b"\n") + 1
    try:
        json.loads(body[start:])
    except ValueError:
        handle.truncate(start)
    else:
        handle.write(b"\n")
    handle.seek(0, os.SEEK_END)
