"""Free loopback ports for local servers."""

from __future__ import annotations

import socket

LOOPBACK = "127.0.0.1"


def free_port(host: str = LOOPBACK) -> int:
    """A port that was free on ``host`` a moment ago.

    The kernel picks it (bind to port 0), so two launches in parallel get different ports. The
    socket is closed before the server binds, so another program can still take the port in
    between; the process launcher retries once with a new port when that happens.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])
