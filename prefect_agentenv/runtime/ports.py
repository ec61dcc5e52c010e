"""Free loopback ports for local servers."""

from __future__ import annotations

import socket
import threading
import time

LOOPBACK = "127.0.0.1"

HANDED_OUT_SECONDS = 120.0
"""How long a port given to a launch is not given to another one: longer than a server takes to
bind the port it was given (the kernel may pick a closed port again at once)."""

_MAX_PICKS = 50

_handed_out: dict[tuple[str, int], float] = {}
_lock = threading.Lock()


def free_port(host: str = LOOPBACK) -> int:
    """A port that was free on ``host`` a moment ago, and that this process has not handed out in
    the last :data:`HANDED_OUT_SECONDS`.

    The kernel picks it (bind to port 0). The socket is closed before the server binds, and the
    kernel may pick the same closed port for the next caller: two launches in parallel (a
    benchmark's task runs) could then be given one port, the first server to bind it answers for
    both, and the other launch talks to the wrong server. So the ports handed out are remembered
    for a while and a port picked again is skipped. Another program can still take the port in
    between; the process launcher retries once with a new port when that happens.
    """
    with _lock:
        now = time.monotonic()
        for key, at in list(_handed_out.items()):
            if now - at > HANDED_OUT_SECONDS:
                del _handed_out[key]
        for _ in range(_MAX_PICKS):
            port = _kernel_pick(host)
            if (host, port) not in _handed_out:
                break
        _handed_out[(host, port)] = now
        return port


def forget_handed_out() -> None:
    """Forget the ports handed out so far (for tests that hand out many)."""
    with _lock:
        _handed_out.clear()


def _kernel_pick(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])
