"""Deploy steps with a warm pool: take an instance from the benchmark's pool, reset it, give it back.

Used by deploy_env and by agent deployment when :func:`~prefect_agentenv.runtime.resources.pool.active_pool`
is set (a benchmark with ``pool: true``); each returns None when the step should start its own
instance instead (no pool, a live URL, an agent whose model lives only as long as the run).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from prefect_agentenv.exceptions import DeployError
from prefect_agentenv.run_services.clients import http_client
from prefect_agentenv.runtime.resources.run import RunResources, current_run, lookups_of, shared_lookup
from prefect_agentenv.runtime.resources.sandbox import Sandbox, create_sandbox
from prefect_agentenv.steps.base import StepModel

if TYPE_CHECKING:  # the runtime loads on use: `validate` imports step modules and stays light
    from prefect_agentenv.runtime.launch.base import Instance, LaunchSpec
    from prefect_agentenv.runtime.resources.pool import Warm, WarmPool

logger = logging.getLogger("prefect_agentenv.runtime.resources.pool")

_NOT_CONFIG = {"id", "depends_on", "fail_task_on_error", "retry_config", "version"}
_T = TypeVar("_T")


async def resolve_once(key: tuple[str, ...], lookup: Callable[[], Awaitable[_T]]) -> _T:
    """The first result of ``lookup()`` in this run (its lookahead may have asked already), or in
    its benchmark run when it runs in one (see :func:`~prefect_agentenv.runtime.resources.run.lookups_of`)."""
    return await shared_lookup(lookups_of(current_run()), key, lookup)


async def pooled_env(step: StepModel, env_id: str, spec: LaunchSpec) -> Instance | None:
    """A reset env instance from the pool (registered to go back at teardown), or None."""
    from prefect_agentenv.protocols.env import EnvClient
    from prefect_agentenv.runtime.launch.registry import launcher_for
    from prefect_agentenv.runtime.resources.pool import Warm, WarmPool, active_pool

    pool = active_pool()
    if pool is None or spec.kind == "url":
        return None
    run = current_run()
    key = WarmPool.key("env", env_id, spec)

    async def start() -> Warm:
        launcher = launcher_for(spec)
        return Warm(await launcher.start(spec, name=env_id, workdir=pool.workdir / "envs"), launcher, spec)

    warm = await _acquire(pool, key, start, step, run)
    if warm.uses > 1:
        client = run.services.env_clients.setdefault(
            warm.instance.instance_id, EnvClient(warm.instance.base_url, http_client(run), name=env_id))
        if await client.supports("data/reset"):
            await client.data_reset()
    _give_back_at_teardown(run, pool, key, warm, step, kind="env", key_name=env_id)
    return warm.instance


async def pooled_agent(step: StepModel, *, agent_name: str, a2a_agent_id: str, spec: LaunchSpec,
                       env: dict[str, str], per_run_model: bool,
                       mcp_servers: dict[str, str]) -> tuple[Instance, Sandbox] | None:
    """An agent instance from the pool, its sandbox emptied, or None.

    ``env`` is what the process is started with besides its sandbox (model endpoint, …); the
    step's own fields, the run's overrides and the MCP servers it is to be given (name: URL, the
    env instances of this task run) are part of the key too, so an agent is only handed to task
    runs that configure it the same way (config set by one run cannot leak, and an agent already
    holds exactly the env servers it is given again).
    """
    from prefect_agentenv.runtime.launch.registry import launcher_for
    from prefect_agentenv.runtime.resources.pool import Warm, WarmPool, active_pool

    pool = active_pool()
    if pool is None or spec.kind == "url" or per_run_model:
        return None
    run = current_run()
    fingerprint = {"step": step.model_dump(mode="json", exclude=_NOT_CONFIG), "overrides": run.overrides.as_pairs(),
                   "env": env, "mcp_servers": mcp_servers}
    key = WarmPool.key("agent", f"{a2a_agent_id}/{agent_name}", spec, {"x": json.dumps(fingerprint, sort_keys=True,
                                                                                         default=str)})

    async def start() -> Warm:
        sandbox = create_sandbox(pool.workdir, agent_name)
        launcher = launcher_for(spec)
        instance = await launcher.start(spec, name=agent_name, workdir=pool.workdir / "agents", cwd=sandbox.root,
                                        extra_env={**sandbox.env(), **env})
        return Warm(instance, launcher, spec, sandbox)

    warm = await _acquire(pool, key, start, step, run)
    assert warm.sandbox is not None
    if warm.uses > 1:
        warm.sandbox.clear()
    _give_back_at_teardown(run, pool, key, warm, step, kind="agent", key_name=agent_name)
    return warm.instance, warm.sandbox


async def _acquire(pool: WarmPool, key: str, start: Any, step: StepModel, run: RunResources) -> Warm:
    try:
        return await pool.acquire(key, start, client=http_client(run))
    except DeployError as exc:
        exc.step_id, exc.step_type = step.id, step.type
        raise


def _give_back_at_teardown(run: RunResources, pool: WarmPool, key: str, warm: Warm, step: StepModel, *,
                           kind: str, key_name: str) -> None:
    label = f"{kind} {key_name} ({warm.instance.instance_id})"

    async def give_back() -> None:
        client = run.services.a2a_clients.get(warm.instance.instance_id) if kind == "agent" else None
        if client is not None and client.may_be_working:
            # Its work on this run's prompt would reach the next task run (its files, its tool calls).
            logger.info("%s may still be working on a prompt of the task run that ended: stopped, not pooled",
                        label)
            entry.label = f"{label} stopped, not pooled: it may still be working on a prompt"
            await pool.discard(warm)
            return
        pool.release(key, warm)

    entry = run.teardown.add(f"{label} back to the pool", give_back, owner_step=step.id, kind=kind, key=key_name)
