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

from prefect_agentenv.agents.mock_model.app import GRACEFUL_SHUTDOWN_SECONDS, MockModelState, build_app
from prefect_agentenv.runtime.launch.guest_server import GuestServer, start_guest_server


class InProcessMockModel:
    """A running mock model; :meth:`stop` ends it."""

    def __init__(self, served: GuestServer, state: MockModelState) -> None:
        self._served = served
        self._state = state
        self.base_url = served.base_url
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
        await self._served.stop()


async def serve_mock_model(host: str = "127.0.0.1") -> InProcessMockModel:
    """Start a mock model on a free port of ``host`` in this event loop; return once it listens.

    Raises:
        OSError: the port could not be bound or the server did not start.
    """
    state = MockModelState()
    served = await start_guest_server(build_app(state), host, graceful_shutdown_seconds=GRACEFUL_SHUTDOWN_SECONDS,
                                      name="mock model")
    return InProcessMockModel(served, state)
