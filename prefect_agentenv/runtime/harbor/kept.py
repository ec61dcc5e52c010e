"""A Harbor environment's folders kept as tar archives, and put back into a fresh container.

What a rescore needs of a Harbor run is the state its tests read: the workdir as the agent left it
(shared verifier), or ``/logs/artifacts`` and the declared artifacts (separate verifier). Each folder
or file is kept as the tar ``docker cp CONTAINER:PATH -`` writes (no ``tar`` needed in the image),
and restored with ``docker cp -a - CONTAINER:PARENT`` (owners and modes as they were). Secret values
are masked inside the archive's files, member by member, so the archive stays a valid tar.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import posixpath
import shlex
import tarfile
from pathlib import Path

from prefect_agentenv.redaction import Redactor
from prefect_agentenv.runtime.harbor.environment import HarborEnvironmentError, exec_in

_TIMEOUT = 600.0
"""Bound on one copy: a large workdir takes a while, a hung daemon must not hold the run."""
MAX_KEPT_BYTES = 1024 * 1024 * 1024
"""Largest archive kept (1 GiB): the submission holds it in memory while it is stored, and the agent
decides how much its workdir holds."""


async def _docker(args: list[str], *, stdin: bytes | None = None, stdout: Path | None = None) -> tuple[int, str]:
    """A docker CLI call with binary input or output; (exit code, stderr)."""
    out = stdout.open("wb") if stdout is not None else None
    try:
        process = await asyncio.create_subprocess_exec(
            *args, stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=out or asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
        try:
            _, err = await asyncio.wait_for(process.communicate(stdin), _TIMEOUT)
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
            raise
    finally:
        if out is not None:
            out.close()
    return process.returncode or 0, err.decode(errors="replace")


async def archive_out(container: str, path: str, target: Path) -> bool:
    """``path`` of the container as a tar file at ``target`` (its top entry is the path's base name);
    False, and no file, when the path is absent.

    Raises:
        HarborEnvironmentError: the archive is larger than ``MAX_KEPT_BYTES`` (the file is removed).
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    code, _ = await _docker(["docker", "cp", f"{container}:{path}", "-"], stdout=target)
    if code != 0:
        target.unlink(missing_ok=True)
        return False
    size = target.stat().st_size
    if size > MAX_KEPT_BYTES:
        target.unlink()
        raise HarborEnvironmentError(f"{path} is {size / 1e6:.0f} MB as a tar, over the {MAX_KEPT_BYTES / 1e6:.0f} MB "
                                     "kept for a rescore")
    return True


async def archive_in(container: str, path: str, archive: bytes) -> None:
    """The kept ``archive`` of ``path`` put back at ``path``: whatever the image holds there removed
    first (a file the agent deleted stays deleted), its parent made when absent.

    Raises:
        HarborEnvironmentError: docker could not clear the path or copy the archive.
    """
    parent = posixpath.dirname(path.rstrip("/")) or "/"
    clear = f"mkdir -p {shlex.quote(parent)} && rm -rf {shlex.quote(path)}"
    cleared = await exec_in(container, clear, user="root", timeout=120)
    if cleared.exit_code != 0:
        raise HarborEnvironmentError(f"cannot clear {path} before restoring it: {cleared.output.strip()[-300:]}")
    code, err = await _docker(["docker", "cp", "-a", "-", f"{container}:{parent}"], stdin=archive)
    if code != 0:
        raise HarborEnvironmentError(f"cannot restore {path}: {err.strip()[-300:]}")


def masked_archive(archive: bytes, redactor: Redactor) -> bytes:
    """``archive`` with every secret value masked in its files' text (binary files left alone)."""
    if not redactor:
        return archive
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:") as source, tarfile.open(fileobj=out, mode="w:") as sink:
        for member in source:
            data = source.extractfile(member).read() if member.isfile() else None  # type: ignore[union-attr]
            if data is None:
                sink.addfile(member)
                continue
            masked = redactor.record(data)
            body = masked if isinstance(masked, bytes) else masked.encode()
            member.size = len(body)
            sink.addfile(member, io.BytesIO(body))
    return out.getvalue()


def is_kept_path(path: str) -> bool:
    """Whether ``path`` can be kept and restored: absolute, and not the root itself."""
    return path.startswith("/") and path.rstrip("/") != ""


__all__ = ["archive_in", "archive_out", "is_kept_path", "masked_archive"]
