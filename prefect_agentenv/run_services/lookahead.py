"""What a run can start before its steps ask: its agent, and the mock model its agents call.

A ``deploy_agent`` step waits for the envs it is given, but only to configure the agent: the
process itself needs none of them (they reach it through its mcp-config extension). In a run with
one ``deploy_agent`` step, the lookahead launches that agent with the run, beside the envs, the
way the step would (same resolution, sandbox, concurrency slot, model and environment); the step
then takes the running agent and configures it. With several agents (an agent's model may come
from the one deployed before it) the lookahead starts only the mock model, when one of them calls
a model and no endpoint is configured (its model-endpoint block lookup and start, otherwise
waited for at deploy time). A launch whose step never runs (an env failed, the run was stopped) is stopped with
the rest at teardown; an error is met by the step, in its own place.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Sequence
from typing import Any

from prefect_agentenv.run_services.agents import MODEL_ROLE_OF, effective_agent_id, launch_early, model_for
from prefect_agentenv.runtime.resources.run import RunResources
from prefect_agentenv.steps.base import StepModel
from prefect_agentenv.steps.deploy_agent import DEFAULT_AGENT_ID, DeployAgentStep

logger = logging.getLogger("prefect_agentenv.agents")


def start_lookahead(run: RunResources, steps: Sequence[StepModel]) -> asyncio.Task[None] | None:
    """Start the lookahead of a run about to execute ``steps`` (None when there is nothing to do).
    Must run inside the run (``bind_run``); :func:`stop_lookahead` ends it before teardown."""
    agents = [s for s in steps if isinstance(s, DeployAgentStep)]
    if not agents:
        return None
    return asyncio.ensure_future(_look_ahead(run, agents))


async def stop_lookahead(run: RunResources, lookahead: asyncio.Task[None] | None) -> None:
    """End the lookahead, and the launches no step took, so teardown sees all they started."""
    starts = (lookahead, run.services.mock_model_start.task, run.services.gateway_start.task)
    pending: list[asyncio.Future[Any]] = [t for t in starts if t is not None and not t.done()]
    for _, launch in run.services.early_agents.values():  # their steps never ran (an env failed, a stop)
        if not launch.done():
            pending.append(launch)
        elif not launch.cancelled():
            launch.exception()  # retrieved: its step was skipped, its error is not the run's
    run.services.early_agents.clear()
    for task in pending:
        task.cancel()
    for task in pending:
        with contextlib.suppress(BaseException):
            await task


async def _look_ahead(run: RunResources, agents: list[DeployAgentStep]) -> None:
    try:
        if len(agents) == 1:
            await _launch(run, agents[0])
        else:
            await _warm_models(run, [(_agent_id(run, s), s.model) for s in agents])
    except Exception as exc:  # noqa: BLE001 - the step that needs it meets the same problem in its place
        logger.debug("lookahead stopped: %s", exc)


async def _launch(run: RunResources, step: DeployAgentStep) -> None:
    """The run's one agent, launched beside the envs it will be given: starting it does not need
    them (they reach it through its mcp-config extension once it is deployed)."""
    await launch_early(step, agent_name=step.agent_name, a2a_agent_id=_agent_id(run, step),
                       model=step.model or run.overrides.model, extra_env=step.env_vars or None)


def _agent_id(run: RunResources, step: DeployAgentStep) -> str:
    return effective_agent_id(run, step.agent_name, step.a2a_agent_id or DEFAULT_AGENT_ID)


async def _warm_models(run: RunResources, agents: list[tuple[str, str | None]]) -> None:
    """Several agents: only the mock model is started early (an agent's model may come from the
    one deployed before it)."""
    from prefect_agentenv.resolution.servers import resolve_agent
    from prefect_agentenv.run_services.pooling import resolve_once

    for agent_id, model in dict.fromkeys(agents):
        resolved = await resolve_once(("agent", agent_id), functools.partial(resolve_agent, agent_id))
        if resolved.uses_model:
            await model_for(run, MODEL_ROLE_OF.get(agent_id, "agent"), model or run.overrides.model)
            return  # one mock model serves the whole run
