"""Free loopback ports for local servers."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: the ports are remembered by this process only
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger("prefect_agentenv.runtime")

LOOPBACK = "127.0.0.1"

HANDED_OUT_SECONDS = 120.0
"""How long a port given to a launch is not given to another one: longer than a server takes to
bind the port it was given (the kernel may pick a closed port again at once)."""

_MAX_PICKS = 50

_handed_out: dict[str, float] = {}
"""Ports this process handed out, as ``host:port``, with when (wall clock)."""
_lock = threading.Lock()


def shared_registry() -> Path:
    """The file where this user's processes on this host note the ports they handed out."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(tempfile.gettempdir()) / f"prefect-agentenv-ports-{uid}.json"


def free_port(host: str = LOOPBACK) -> int:
    """A port that was free on ``host`` a moment ago, and that no process of this user on this host
    handed out through this function in the last :data:`HANDED_OUT_SECONDS`.

    The kernel picks it (bind to port 0). The socket is closed before the server binds, and the
    kernel may pick the same closed port for the next caller: two launches at once (a benchmark's
    task runs, or runs in parallel processes) could then be given one port, the first server to
    bind it answers for both, and the other launch talks to the wrong server. So the ports handed
    out are remembered, in this process and in a small file shared with the user's other
    processes (:func:`shared_registry`, locked while it is read and written), and a port picked
    again is skipped. When the file cannot be used, this process's memory still applies. Another
    program can still take the port in between; the process launcher retries once with a new port
    when that happens.
    """
    with _lock, _shared_table() as shared:
        now = time.time()
        for table in (_handed_out, shared):
            for key, at in list(table.items()):
                if not isinstance(at, (int, float)) or not 0 <= now - at <= HANDED_OUT_SECONDS:
                    del table[key]
        for _ in range(_MAX_PICKS):
            port = _kernel_pick(host)
            key = f"{host}:{port}"
            if key not in _handed_out and key not in shared:
                break
        _handed_out[key] = shared[key] = now
        return port


def forget_handed_out() -> None:
    """Forget the ports this process handed out so far (for tests that hand out many)."""
    with _lock:
        _handed_out.clear()


@contextlib.contextmanager
def _shared_table() -> Iterator[dict[str, float]]:
    """The shared registry's entries, locked; what the block leaves in the dict is written back."""
    if fcntl is None:
        yield {}
        return
    handle = _open_registry(shared_registry())
    if handle is None:
        yield {}
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        try:
            table = json.loads(handle.read() or "{}")
        except ValueError:  # a torn or foreign file: start it again
            table = {}
        if not isinstance(table, dict):
            table = {}
        yield table
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(json.dumps(table))
            handle.flush()
        except OSError as exc:
            logger.debug("could not note the port in %s: %s", shared_registry(), exc)


def _open_registry(path: Path) -> IO[str] | None:
    """The registry file, opened for reading and writing: created private to this user, never
    through a symlink, and only if this user owns it (it lives in the shared temp folder)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError as exc:
        logger.debug("ports are remembered in this process only: %s", exc)
        return None
    if hasattr(os, "getuid") and os.fstat(fd).st_uid != os.getuid():
        os.close(fd)
        logger.debug("ports are remembered in this process only: %s belongs to another user", path)
        return None
    return os.fdopen(fd, "r+", encoding="utf-8")


def _kernel_pick(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])
