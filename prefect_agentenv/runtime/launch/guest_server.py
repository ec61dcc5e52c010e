"""An ASGI app served from the calling process's event loop, on a free port of its own.

The in-process mock model and the model gateway both run this way, beside the run: no interpreter
to start, one listening socket, stopped by the handle that started it. The host keeps its signal
handlers and its logging configuration.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator
from dataclasses import dataclass

import uvicorn
from starlette.types import ASGIApp

STARTUP_TIMEOUT_SECONDS = 10.0


class _GuestServer(uvicorn.Server):
    """A uvicorn server inside a process it does not own: the host keeps its signal handlers (a
    Ctrl-C stops the run, which stops this server at teardown) and its logging configuration."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@dataclass
class GuestServer:
    """A running app; :meth:`stop` ends it."""

    base_url: str
    """``http://<host>:<port>`` (an IPv6 host in brackets)."""
    _server: uvicorn.Server
    _serving: asyncio.Future[None]
    _socket: socket.socket

    async def stop(self) -> None:
        """Close the socket and the connections (open ones are cut after the graceful shutdown)."""
        self._server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await self._serving
        self._socket.close()


async def start_guest_server(app: ASGIApp, host: str, *, graceful_shutdown_seconds: int,
                             name: str, lifespan: bool = False) -> GuestServer:
    """Serve ``app`` on a free port of ``host`` in this event loop, once it accepts connections.

    ``lifespan`` runs the app's startup and shutdown (an MCP app starts its session manager there).

    Raises:
        OSError: the port could not be bound, or the server (``name``, for the message) did not start.
    """
    # IPPROTO_TCP named, not left 0: asyncio turns Nagle off (TCP_NODELAY) only on sockets whose proto
    # says TCP, and with Nagle on, a stream's last small write waits ~40 ms for the client's delayed ACK.
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.bind((host, 0))
    except OSError:
        sock.close()
        raise
    config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="on" if lifespan else "off",
                            timeout_graceful_shutdown=graceful_shutdown_seconds)
    server = _GuestServer(config)
    serving = asyncio.ensure_future(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(STARTUP_TIMEOUT_SECONDS):
            while not server.started:
                if serving.done():
                    serving.result()  # raises what stopped it
                    raise OSError(f"the {name} stopped while starting")
                await asyncio.sleep(0.005)
    except BaseException:
        server.should_exit = True
        serving.cancel()
        sock.close()
        raise
    shown = f"[{host}]" if ":" in host else host
    return GuestServer(f"http://{shown}:{sock.getsockname()[1]}", server, serving, sock)
