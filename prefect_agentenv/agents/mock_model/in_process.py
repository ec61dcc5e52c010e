"""The mock model served from the calling process's event loop, for one run.

A run that needs the mock model used to start it as a process of its own: a fresh interpreter
importing Starlette and uvicorn, about a second of CPU, paid by every task run of a benchmark
whose agent might call a model. Served here instead, it costs a listening socket and the
handful of requests the run makes. Each run still gets its own server, with its own script
queue and request log (:class:`~prefect_agentenv.agents.mock_model.app.MockModelState`), on its
own loopback port, so the agents (separate processes) reach it the same way. A benchmark with a
warm pool hands a server from one task run to the next instead, its state reset in between
(``runtime.pool``), so the agents given its address can be pooled too.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator

import uvicorn

from prefect_agentenv.agents.mock_model.app import GRACEFUL_SHUTDOWN_SECONDS, MockModelState, build_app

_STARTUP_TIMEOUT_SECONDS = 10.0


class _GuestServer(uvicorn.Server):
    """A uvicorn server inside a process it does not own: the host keeps its signal handlers (a
    Ctrl-C stops the run, which stops this server at teardown) and its logging configuration."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class InProcessMockModel:
    """A running mock model; :meth:`stop` ends it."""

    def __init__(self, server: uvicorn.Server, serving: asyncio.Task[None], base_url: str,
                 state: MockModelState) -> None:
        self._server, self._serving = server, serving
        self._state = state
        self.base_url = base_url
        """``http://127.0.0.1:<port>``: an Anthropic client's base URL; an OpenAI client's is under ``/v1``."""

    @property
    def busy(self) -> bool:
        """A completion is being answered (a scripted delay holds it open)."""
        return self._state.in_flight > 0

    def reset(self) -> None:
        """Forget the script queue and the request log, as ``POST /mock/reset`` does."""
        self._state.reset()

    async def stop(self) -> None:
        """Close the socket and the connections (a held scripted delay is cut after
        ``GRACEFUL_SHUTDOWN_SECONDS``)."""
        self._server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await self._serving


async def serve_mock_model(host: str = "127.0.0.1") -> InProcessMockModel:
    """Start a mock model on a free port of ``host`` in this event loop; return once it listens.

    Raises:
        OSError: the port could not be bound or the server did not start.
    """
    # IPPROTO_TCP named, not left 0: asyncio turns Nagle off only on sockets whose proto says TCP;
    # with Nagle on, a stream's last small write waited ~40 ms for the client's delayed ACK.
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.bind((host, 0))
    except OSError:
        sock.close()
        raise
    state = MockModelState()
    config = uvicorn.Config(build_app(state), log_config=None, access_log=False, lifespan="off",
                            timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS)
    server = _GuestServer(config)
    serving = asyncio.ensure_future(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(_STARTUP_TIMEOUT_SECONDS):
            while not server.started:
                if serving.done():
                    serving.result()  # raises what stopped it
                    raise OSError("the mock model stopped while starting")
                await asyncio.sleep(0.005)
    except BaseException:
        server.should_exit = True
        serving.cancel()
        sock.close()
        raise
    port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    return InProcessMockModel(server, serving, f"http://{shown}:{port}", state)
