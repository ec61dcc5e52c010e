"""Serving the gateway on a free loopback port of the calling event loop, and the handle that stops it.

The gateway runs in the runner's own process, beside the run, as the in-process mock model does:
no interpreter to start, one listening socket, and it ends when its ``async with`` ends.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import httpx
from starlette.types import ASGIApp

from prefect_agentenv.gateway.cassette import Cassette, Player
from prefect_agentenv.gateway.config import GatewayConfig
from prefect_agentenv.gateway.hold import ModelHold
from prefect_agentenv.gateway.ledger import CallLedger, CallRecord, LimitName, RunTotals
from prefect_agentenv.gateway.limits import Budget, CallLimits, Spent
from prefect_agentenv.gateway.proxy import GatewayState, build_app
from prefect_agentenv.gateway.tokens import TokenRegistry
from prefect_agentenv.runtime.launch.guest_server import start_guest_server

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

    def __init__(self, base_url: str, state: GatewayState) -> None:
        self.base_url = base_url
        """``http://127.0.0.1:<port>``: an Anthropic client's base URL."""
        self.config = state.config
        self.recording = state.recording
        """The cassette the gateway records every relayed call into (None: not recording)."""
        self._tokens, self._ledger, self._limits = state.tokens, state.ledger, state.limits

    def __repr__(self) -> str:
        return f"ModelGateway({self.base_url!r})"

    @property
    def openai_base_url(self) -> str:
        """An OpenAI client's base URL (``<base_url>/v1``)."""
        return f"{self.base_url}/v1"

    def issue(self, run_id: str, role: str, upstreams: GatewayConfig | None = None, *,
              limits: CallLimits | None = None, budget: Budget | None = None) -> str:
        """A token for ``role`` in ``run_id``: what the agent, judge or simulator gets instead of a key.

        Args:
            run_id: The run the token's calls are counted against (every token of a run shares its limits).
            role: Who holds it (``agent``, ``judge``, ``user``), as its call records will say.
            upstreams: Where its calls go (the endpoint its role resolved to); None: the gateway's own.
            limits: The run's limits, from now on (replacing any given before, their clock restarted).
            budget: A budget the run's calls are counted against, shared with other runs.
        """
        if limits is not None or budget is not None:
            self._limits.attach(run_id, limits, budget)
        return self._tokens.issue(run_id, role, upstreams)

    def rebind(self, token: str, run_id: str, upstreams: GatewayConfig | None = None, *,
               limits: CallLimits | None = None, budget: Budget | None = None) -> None:
        """Count ``token``'s calls against ``run_id`` from now on, sent to ``upstreams`` (see
        :meth:`TokenRegistry.rebind`), under ``limits`` and ``budget`` as :meth:`issue` takes them."""
        if limits is not None or budget is not None:
            self._limits.attach(run_id, limits, budget)
        self._tokens.rebind(token, run_id, upstreams)

    def limit_reached(self, run_id: str) -> LimitName | None:
        """The limit (or budget) that refused one of the run's calls (the first), or None: when set, the
        run's prompt ended truncated."""
        return self._limits.reached(run_id)

    def spent(self, run_id: str) -> Spent:
        """What the run has used as its limits count it: calls let through, tokens and cost of those ended.
        Kept for runs issued with limits or a budget only (zeros otherwise: ``totals`` counts every run)."""
        return self._limits.spent(run_id)

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
        """Drop the records and limits of ``run_id`` (once its totals are kept elsewhere; a budget keeps
        what the run spent)."""
        self._ledger.forget(run_id)
        self._limits.forget(run_id)


@contextlib.asynccontextmanager
async def serve_gateway(config: GatewayConfig, host: str = LOOPBACK, *, recording: Cassette | None = None,
                        replay: Cassette | None = None, hold: ModelHold | None = None) -> AsyncIterator[ModelGateway]:
    """Start the gateway on a free port of ``host`` (loopback); stop it, and close its upstream client, on exit.

    Args:
        config: The upstreams and prices of tokens issued without their own.
        host: The address to listen on.
        recording: A cassette every completion call relayed to its end is added to.
        replay: A cassette the gateway answers from instead of any upstream (matched by request; a
            request never recorded is refused with its model and hash).
        hold: While held, agents' new calls wait before they are relayed (``control pause --now``).

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
        state = GatewayState(config=config, tokens=tokens, ledger=ledger, http=http, recording=recording,
                             player=Player(replay) if replay is not None else None, hold=hold)
        async with serve_asgi(build_app(state), host) as base_url:
            yield ModelGateway(base_url, state)
