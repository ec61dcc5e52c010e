"""Serving the gateway on a free loopback port of the calling event loop, and the handle that stops it.

The gateway runs in the runner's own process, beside the run, as the in-process mock model does:
no interpreter to start, one listening socket, and it ends when its ``async with`` ends.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import httpx
from starlette.types import ASGIApp

from prefect_agentenv.gateway.config import GatewayConfig
from prefect_agentenv.gateway.ledger import CallLedger, CallRecord, RunTotals
from prefect_agentenv.gateway.proxy import GatewayState, build_app
from prefect_agentenv.gateway.tokens import TokenRegistry
from prefect_agentenv.runtime.guest_server import start_guest_server

LOOPBACK = "127.0.0.1"
_GRACEFUL_SHUTDOWN_SECONDS = 2
"""Streams still open when the gateway stops are cut after this long (its run is ending)."""


@contextlib.asynccontextmanager
async def serve_asgi(app: ASGIApp, host: str = LOOPBACK) -> AsyncIterator[str]:
    """Serve ``app`` on a free port of ``host`` in this event loop; yield its base URL; stop it on exit.

    Raises:
        OSError: the port could not be bound or the server did not start.
    """
    served = await start_guest_server(app, host, graceful_shutdown_seconds=_GRACEFUL_SHUTDOWN_SECONDS,
                                      name="gateway")
    try:
        yield served.base_url
    finally:
        await served.stop()


class ModelGateway:
    """A running gateway: its address, the tokens it takes, and what each run's calls used."""

    def __init__(self, base_url: str, config: GatewayConfig, tokens: TokenRegistry, ledger: CallLedger) -> None:
        self.base_url = base_url
        """``http://127.0.0.1:<port>``: an Anthropic client's base URL."""
        self.config = config
        self._tokens, self._ledger = tokens, ledger

    def __repr__(self) -> str:
        return f"ModelGateway({self.base_url!r})"

    @property
    def openai_base_url(self) -> str:
        """An OpenAI client's base URL (``<base_url>/v1``)."""
        return f"{self.base_url}/v1"

    def issue(self, run_id: str, role: str, upstreams: GatewayConfig | None = None) -> str:
        """A token for ``role`` in ``run_id``: what the agent, judge or simulator gets instead of a key.
        Its calls go to ``upstreams`` when given (the endpoint its role resolved to), else the gateway's own."""
        return self._tokens.issue(run_id, role, upstreams)

    def rebind(self, token: str, run_id: str, upstreams: GatewayConfig | None = None) -> None:
        """Count ``token``'s calls against ``run_id`` from now on, sent to ``upstreams`` (see
        :meth:`TokenRegistry.rebind`)."""
        self._tokens.rebind(token, run_id, upstreams)

    def revoke(self, token: str) -> bool:
        """Refuse ``token`` from now on; False when it was not live."""
        return self._tokens.revoke(token)

    def revoke_run(self, run_id: str) -> int:
        """Refuse every token of ``run_id`` (at the run's end); how many there were."""
        return self._tokens.revoke_run(run_id)

    def calls(self, run_id: str) -> list[CallRecord]:
        """Every completion call of ``run_id`` that has ended, in order."""
        return self._ledger.calls(run_id)

    def totals(self, run_id: str) -> RunTotals:
        """The calls of ``run_id`` added up."""
        return self._ledger.totals(run_id)

    def forget(self, run_id: str) -> None:
        """Drop the records of ``run_id`` (once its totals are kept elsewhere)."""
        self._ledger.forget(run_id)


@contextlib.asynccontextmanager
async def serve_gateway(config: GatewayConfig, host: str = LOOPBACK) -> AsyncIterator[ModelGateway]:
    """Start the gateway on a free port of ``host`` (loopback); stop it, and close its upstream client, on exit.

    Example:
        ```python
        async with serve_gateway(GatewayConfig(chat=Upstream(base_url="https://api.openai.com/v1",
                                                             api_key=key))) as gateway:
            token = gateway.issue(run_id, "agent")   # the agent's OPENAI_API_KEY; gateway.openai_base_url its base
            ...
            print(gateway.totals(run_id))
        ```
    """
    tokens, ledger = TokenRegistry(), CallLedger()
    # One client for every upstream: pooled connections, no proxy from the environment (loopback
    # upstreams must not be sent to one), no limit on connections (each open stream holds one).
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=64)
    async with httpx.AsyncClient(limits=limits, trust_env=False) as http:
        app = build_app(GatewayState(config=config, tokens=tokens, ledger=ledger, http=http))
        async with serve_asgi(app, host) as base_url:
            yield ModelGateway(base_url, config, tokens, ledger)
