"""deploy_human_agent: name a person's A2A endpoint as an agent of the run (the user of a conversation)."""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

from pydantic import Field

from prefect_agentenv.context import DeployedAgent, HumanAgent, RunContext
from prefect_agentenv.exceptions import StepError
from prefect_agentenv.runtime.resources.run import current_run
from prefect_agentenv.steps.base import Provides, StepModel
from prefect_agentenv.steps.registry import StepDefinition

HUMAN_URL_OVERRIDE = "human_a2a_url"
"""Run override giving the person's endpoint when the document names none."""


class DeployHumanAgentStep(StepModel):
    """Registers a person's A2A endpoint under agent_name; nothing is started or stopped.

    A prompt_agent conversation with ``user_agent_name`` set to this name (or with no user named,
    when the name is AgentEnv's default ``human_agent``) sends the agent's replies to the person and
    takes their text as the next prompt.
    """

    type: Literal["deploy_human_agent"] = "deploy_human_agent"
    agent_name: Annotated[str, Provides("agent")] = Field(default="human_agent", min_length=1)
    """Name later steps use for the person."""
    a2a_url: str | None = Field(default=None, pattern=r"^https?://")
    """The person's A2A endpoint; the run's ``--override human_a2a_url=URL`` when omitted."""


async def run(step: DeployHumanAgentStep, ctx: RunContext) -> RunContext:
    """Record the person as a deployed agent (no sandbox) and in metadata.human_agents."""
    if step.agent_name in ctx.deployed_agents:
        raise StepError(f"Agent with name '{step.agent_name}' is already deployed", step=step)
    url = step.a2a_url or current_run().overrides.human_a2a_url
    if not url:
        raise StepError(f"no A2A endpoint for the person '{step.agent_name}': set a2a_url, or run with "
                        f"--override {HUMAN_URL_OVERRIDE}=URL", step=step)
    ctx.deployed_agents[step.agent_name] = DeployedAgent(
        agent_name=step.agent_name, a2a_url=url, instance_id=f"human-{step.agent_name}-{uuid.uuid4().hex[:8]}")
    ctx.metadata.human_agents.append(HumanAgent(step_id=step.id, agent_name=step.agent_name, a2a_url=url))
    return ctx


definition = StepDefinition(DeployHumanAgentStep, run)
