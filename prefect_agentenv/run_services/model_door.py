"""The run's one door to the models: every role's endpoint is handed out as the run's gateway.

An agent, a judge or a user simulator never gets a provider's key: :func:`through_gateway` turns
the endpoint its role resolved to (a ``ModelEndpoint`` block, the settings, or the run's mock
model) into the gateway's URL and a token of the gateway's. The real key and URL become the
token's upstream, so every call is relayed there and counted by the gateway (``gateway/``).

* One gateway per run, started on first use in the run's event loop and stopped at its teardown
  after every agent that called it (teardown kind ``gateway``). Before it stops, its record of
  the run's calls is kept in ``run.services.model_calls`` for the report.
* In a benchmark with a warm pool, the pool hands a gateway to one task run at a time, as it does
  the mock model: its tokens stay the same (so a pooled agent started with one can be handed on)
  and are re-pointed to the task run that holds it.
* One token per role per gateway; an isolated-scoring run uses its parent's gateway and counts
  against the parent's run.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import SecretStr

from prefect_agentenv.gateway.pooled import PooledGateway
from prefect_agentenv.runtime.resources.run import RunResources

if TYPE_CHECKING:  # the gateway (Starlette, uvicorn) loads on use: `validate` stays light
    from prefect_agentenv.gateway import Budget, CallLimits, Cassette
    from prefect_agentenv.gateway.hold import ModelHold
    from prefect_agentenv.resolution.models import ResolvedModel

logger = logging.getLogger("prefect_agentenv.models")


async def through_gateway(run: RunResources, resolved: ResolvedModel) -> ResolvedModel:
    """``resolved`` as the run's gateway serves it: the gateway's URL and a token for the role, the
    real endpoint its upstream. An endpoint with no URL yet (the mock, not started) is returned as is."""
    if resolved.base_url is None:
        return resolved
    door = await ensure_gateway(run)
    account = account_of(run, resolved.role)
    upstreams = resolved.gateway_upstreams()
    # Limits apply to what is evaluated (the agent role); the budget to every call of the run.
    first = account not in door.accounts
    limits = limits_of(run) if first and resolved.role == "agent" else None
    budget = model_budget.get() if first else None
    door.accounts.add(account)
    token = door.tokens.get(resolved.role)
    if token is None:
        token = door.tokens[resolved.role] = door.gateway.issue(account, resolved.role, upstreams,
                                                                limits=limits, budget=budget)
    else:
        door.gateway.rebind(token, account, upstreams, limits=limits, budget=budget)
    run.redact.add(token)
    return resolved.model_copy(update={"base_url": door.gateway.openai_base_url, "api_key": SecretStr(token),
                                       "upstream_base_url": resolved.base_url})


def account_of(run: RunResources, role: str) -> str:
    """Whom the gateway counts a role's calls against: the run itself for its agents (its limits
    apply to them), the run and the role for its judges and simulated users (the agent spending its
    limit must not leave its grader without a model)."""
    usage_run = run.services.usage_run_id or run.run_id
    return usage_run if role == "agent" else f"{usage_run}#{role}"


def limits_of(run: RunResources) -> CallLimits | None:
    """The run's model-call limits: its document's ``limits``, each field overridden by ``limit_<name>``."""
    from prefect_agentenv.gateway.limits import CallLimits

    limits: CallLimits = run.services.model_limits or CallLimits()
    limits = limits.model_copy(update=run.overrides.limits())  # each override already checked (> 0)
    return limits if limits.model_dump(exclude_none=True) else None


def limit_reached(run: RunResources) -> str | None:
    """The limit that refused one of the run's agents' model calls (or the budget), if one did."""
    door = run.services.gateway
    if door is None:
        return None
    reached = door.gateway.limit_reached(account_of(run, "agent"))
    return str(reached) if reached else None


model_budget: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("agentenv_model_budget", default=None)
"""The budget of the benchmark run the current task run belongs to (bound by the benchmark flow)."""


@dataclass(frozen=True)
class ModelTraffic:
    """What the gateways of a benchmark run do with their calls besides relaying them."""

    recording: Cassette | None = None
    """Every call relayed is added here (the benchmark keeps it in the artifact store)."""
    replay: Cassette | None = None
    """The gateways answer from here instead of any provider."""
    hold: ModelHold | None = None
    """Holds the agents' next model calls while set (the benchmark paused with ``--now``)."""


model_traffic: contextvars.ContextVar[ModelTraffic | None] = contextvars.ContextVar("agentenv_model_traffic",
                                                                                     default=None)
"""The current benchmark run's recording or replay (bound by the benchmark flow)."""


async def ensure_gateway(run: RunResources) -> PooledGateway:
    """The run's gateway, started by the first step that needs a model; the others wait for the same
    start, and one that failed is tried again by the next step that needs it."""
    if run.services.gateway is not None:
        return run.services.gateway
    return await run.services.gateway_start.get(functools.partial(_open_gateway, run))


async def _open_gateway(run: RunResources) -> PooledGateway:
    from prefect_agentenv.runtime.resources.pool import active_pool

    pool = active_pool()
    door = await (pool.acquire_gateway(_start_gateway) if pool is not None else _start_gateway())
    door.holder = run.services.usage_run_id or run.run_id
    release: Callable[[], Awaitable[None]] = (functools.partial(pool.release_gateway, door) if pool is not None
                                              else door.stop)
    label = f"model gateway ({door.base_url})" + (" back to the pool" if pool is not None else "")
    run.teardown.add(label, functools.partial(_keep_calls_then, run, door, release), kind="gateway")
    run.services.gateway = door
    run.services.gateway_pooled = pool is not None
    return door


async def _start_gateway() -> PooledGateway:
    from prefect_agentenv.gateway import GatewayConfig, serve_gateway

    traffic = model_traffic.get() or ModelTraffic()
    stack = contextlib.AsyncExitStack()
    gateway = await stack.enter_async_context(serve_gateway(GatewayConfig(), recording=traffic.recording,
                                                            replay=traffic.replay, hold=traffic.hold))
    logger.info("the run's model gateway serves at %s", gateway.base_url)
    return PooledGateway(gateway, stack, gateway.base_url)


async def _keep_calls_then(run: RunResources, door: PooledGateway, release: Callable[[], Awaitable[None]]) -> None:
    """Keep the run's call records for its report, then stop the gateway (or hand it back)."""
    calls = [call for account in sorted(door.accounts) for call in door.gateway.calls(account)]
    kept = run.services.calls_kept_in or run.services
    kept.model_calls = sorted([*(kept.model_calls or []), *calls], key=lambda call: call.started_at)
    for token in door.tokens.values():
        door.gateway.rebind(token, "", None)  # nobody's until the next holder: its calls are refused
    await release()
