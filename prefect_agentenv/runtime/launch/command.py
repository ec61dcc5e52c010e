"""Running a short-lived command (a verify script, a sandbox check) bounded in time and output.

The command starts like every server does (``spawn_supervised``: own process group, dies with
the run, carries the run marker). Its output is read as it comes and only the last
``max_output_bytes`` of each stream are kept, so a script that prints 300 MB costs 300 MB of
pipe traffic, not of memory. On timeout or cancellation the whole group is killed and reaped.
"""

from __future__ import annotations

import asyncio
import subprocess
from dataclasses import dataclass
from pathlib import Path

from prefect_agentenv.runtime.launch.process import _exit_status, _kill_now, _terminate, spawn_supervised

DEFAULT_MAX_OUTPUT_BYTES = 4 * 1024 * 1024
_CHUNK = 64 * 1024


@dataclass(frozen=True)
class CommandResult:
    """How a bounded command ended."""

    returncode: int | None
    stdout: bytes
    """The last ``max_output_bytes`` of stdout (stderr too when merged)."""
    stderr: bytes
    truncated: bool
    """More output was produced than kept."""
    timed_out: bool


async def run_bounded(argv: list[str], *, cwd: Path | None, env: dict[str, str], timeout: float,
                      max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES, merge_stderr: bool = False) -> CommandResult:
    """Run ``argv`` to its end or ``timeout`` seconds, keeping the tail of its output.

    Raises:
        OSError: the command cannot be run.
    """
    process = await spawn_supervised(argv, env=env, cwd=cwd, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE)
    assert process.stdout is not None
    readers = [asyncio.create_task(_tail(process.stdout, max_output_bytes))]
    if process.stderr is not None:
        readers.append(asyncio.create_task(_tail(process.stderr, max_output_bytes)))
    for reader in readers:
        # A reader cancelled on timeout or stop is expected; its outcome is consumed here.
        reader.add_done_callback(lambda t: t.cancelled() or t.exception())
    try:
        _, pending = await asyncio.wait(readers, timeout=timeout)
        timed_out = bool(pending)
        if not timed_out:
            # Its output ended, so it is exiting: let it, rather than killing it half-way.
            for _ in range(250):
                if _exit_status(process) is not None:
                    break
                await asyncio.sleep(0.02)
        code = await _terminate(process, grace=0)
    except BaseException:
        _kill_now(process)
        for reader in readers:
            reader.cancel()
        raise
    outputs = [r.result() if r.done() and not r.cancelled() else (b"", False) for r in readers]
    for reader in readers:
        reader.cancel()
    out, out_cut = outputs[0]
    err, err_cut = outputs[1] if len(outputs) > 1 else (b"", False)
    return CommandResult(code, out, err, out_cut or err_cut, timed_out)


async def _tail(pipe: object, limit: int) -> tuple[bytes, bool]:
    """Read a pipe to its end in a thread, keeping the last ``limit`` bytes."""
    def read() -> tuple[bytes, bool]:
        kept = bytearray()
        cut = False
        while chunk := pipe.read1(_CHUNK) if hasattr(pipe, "read1") else pipe.read(_CHUNK):  # type: ignore[attr-defined]
            kept += chunk
            if len(kept) > limit:
                del kept[:len(kept) - limit]
                cut = True
        pipe.close()  # type: ignore[attr-defined]
        return bytes(kept), cut

    return await asyncio.to_thread(read)
