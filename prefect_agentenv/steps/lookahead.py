"""What a run can start before its steps ask: the mock model its agents will call.

An agent that calls a model, in a run with no model endpoint configured, is given the built-in
mock model: a server of the run's own, ~0.5 s from spawn to ready. Started when the agent is
deployed, that half second sits on the run's critical path between the env being ready and the
agent starting. The lookahead starts it with the run, beside the first envs: it resolves each
``deploy_agent`` step's agent (the same lookup the step makes, shared through the run) and, when
one calls a model and the mock would answer it, starts the mock model the step will then find
running. A guess it gets wrong costs a lookup, never a result: the step decides as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Sequence

from prefect_agentenv.runtime.run import RunResources
from prefect_agentenv.steps.agent_support import MODEL_ROLE_OF, effective_agent_id, model_for
from prefect_agentenv.steps.base import StepModel
from prefect_agentenv.steps.deploy_agent import DEFAULT_AGENT_ID, DeployAgentStep

logger = logging.getLogger("prefect_agentenv.agents")


def start_lookahead(run: RunResources, steps: Sequence[StepModel]) -> asyncio.Task[None] | None:
    """Start the lookahead of a run about to execute ``steps`` (None when there is nothing to do).
    Must run inside the run (``bind_run``); :func:`stop_lookahead` ends it before teardown."""
    agents = [(effective_agent_id(run, s.agent_name, s.a2a_agent_id or DEFAULT_AGENT_ID), s.model)
              for s in steps if isinstance(s, DeployAgentStep)]
    if not agents:
        return None
    return asyncio.ensure_future(_warm_models(run, agents))


async def stop_lookahead(run: RunResources, lookahead: asyncio.Task[None] | None) -> None:
    """End the lookahead and a mock model start no step waits for, so teardown sees all it started."""
    pending = [t for t in (lookahead, run.services.mock_model_start) if t is not None and not t.done()]
    for task in pending:
        task.cancel()
    for task in pending:
        with contextlib.suppress(BaseException):
            await task


async def _warm_models(run: RunResources, agents: list[tuple[str, str | None]]) -> None:
    from prefect_agentenv.resolution.servers import resolve_agent
    from prefect_agentenv.steps.pooling import resolve_once

    try:
        for agent_id, model in dict.fromkeys(agents):
            resolved = await resolve_once(("agent", agent_id), functools.partial(resolve_agent, agent_id))
            if resolved.uses_model:
                await model_for(run, MODEL_ROLE_OF.get(agent_id, "agent"), model or run.overrides.model)
                return  # one mock model serves the whole run
    except Exception as exc:  # noqa: BLE001 - the step that needs it meets the same problem in its place
        logger.debug("lookahead stopped: %s", exc)
