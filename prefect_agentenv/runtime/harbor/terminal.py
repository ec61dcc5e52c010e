"""A terminal in a Harbor environment: ``bash ARGS`` by ``docker exec -it`` on a pseudo-terminal of the host's.

A harness whose shell runs on a terminal (OpenHands types its commands into one interactive bash in a tmux
pane) needs that shell, prompt, echo, line editing and all, to be the environment's. The docker CLI is given
a pseudo-terminal of its own (``-t`` wants one on its standard input), sized as the harness's, and what the
container's bash writes to it is read back as bytes; what the harness types is written to it. Each
command is bounded by ``timeout --foreground`` inside the container (``--foreground``: an interactive bash
must stay in the terminal's foreground process group, or it is stopped on its first read). A ``docker exec``
whose CLI is gone keeps running in the container, so each terminal's processes carry a marker in their
environment (``AGENTENV_EXEC``), and closing the terminal kills, inside the container, every process
that carries it (the bash and what it started).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
import struct
import termios
import uuid
from collections.abc import AsyncIterator

from prefect_agentenv.runtime.harbor.environment import MARKER, kill_marked

_READ = 65536
_SIZED = 'stty rows "$1" cols "$2" 2>/dev/null; shift 2; exec "$@"'
_FULL_WAIT = 0.05
_QUEUED = 64
"""Chunks read and not yet taken before the terminal is no longer read (what the container writes then waits,
as on a terminal nobody reads): a command printing without end cannot fill the runner's memory."""


class Terminal:
    """One ``docker exec -it`` on a pseudo-terminal; read with :meth:`chunks`, typed into with :meth:`write`."""

    def __init__(self, process: asyncio.subprocess.Process, master: int, *, container: str, marker: str) -> None:
        self.process = process
        self.container, self.marker = container, marker
        self._master = master
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._reading, self._ended = True, False
        asyncio.get_running_loop().add_reader(master, self._readable)

    def _readable(self) -> None:
        try:
            data = os.read(self._master, _READ)
        except OSError:  # EIO: every writer of the terminal is gone
            data = b""
        if not data:
            self._pause()
            self._ended = True
            self._queue.put_nowait(None)
            return
        self._queue.put_nowait(data)
        if self._queue.qsize() >= _QUEUED:
            self._pause()

    def _pause(self) -> None:
        if self._reading:
            asyncio.get_running_loop().remove_reader(self._master)
            self._reading = False

    async def chunks(self) -> AsyncIterator[bytes]:
        """What the environment's side wrote, as it comes, until it closes the terminal."""
        while (data := await self._queue.get()) is not None:
            if not (self._reading or self._ended) and self._queue.qsize() < _QUEUED // 2:
                self._reading = True
                asyncio.get_running_loop().add_reader(self._master, self._readable)
            yield data

    async def write(self, data: bytes) -> None:
        """Typed into the terminal; while its buffer is full (the container's side not reading), the writer waits,
        until the terminal or its ``docker exec`` is gone (what is left is dropped)."""
        view = memoryview(data)
        while view and not self._ended and self.process.returncode is None:
            try:
                view = view[os.write(self._master, view):]
            except BlockingIOError:
                await asyncio.sleep(_FULL_WAIT)
            except OSError:
                return

    async def wait(self) -> int:
        """The exit code of the environment's command (``docker exec`` passes it on)."""
        return await self.process.wait()

    async def close(self) -> None:
        """The docker CLI gone and reaped, the terminal's processes in the container killed, the terminal closed,
        its readers told."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        await self.process.wait()
        await kill_marked(self.container, self.marker)
        if self._master >= 0:
            self._pause()
            self._ended = True
            os.close(self._master)
            self._master = -1
            self._queue.put_nowait(None)


async def open_terminal(container: str, args: list[str], *, user: str | None, workdir: str, timeout: float,
                        rows: int, cols: int) -> Terminal:
    """``bash ARGS`` in the container on a terminal of ``rows`` × ``cols``, started."""
    marker = uuid.uuid4().hex
    argv = ["docker", "exec", "-i", "-t", "-w", workdir, "-e", f"{MARKER}={marker}"]
    if user:
        argv += ["-u", user]
    # docker sizes the exec's terminal only after it started: stty sizes it first, so the first command typed
    # sees its columns (``stty size`` said ``0 0`` otherwise)
    argv += [container, "bash", "-c", _SIZED, "sized", str(rows), str(cols),
             "timeout", "--foreground", "-k", "5", str(max(1, int(timeout))), "bash", *args]
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", max(1, rows), max(1, cols), 0, 0))
    os.set_blocking(master, False)
    try:
        process = await asyncio.create_subprocess_exec(*argv, stdin=slave, stdout=slave, stderr=slave,
                                                       start_new_session=True)
    except BaseException:
        os.close(master)
        raise
    finally:
        os.close(slave)
    return Terminal(process, master, container=container, marker=marker)
