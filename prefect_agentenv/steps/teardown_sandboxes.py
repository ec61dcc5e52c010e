"""teardown_sandboxes: stop what the run deployed, best effort, before the run ends."""

from __future__ import annotations

from typing import Literal

from prefect_agentenv.steps.base import AgentRef, EnvRef, StepModel
from prefect_agentenv.steps.registry import StepDefinition


class TeardownSandboxesStep(StepModel):
    """Stops deployed agents and envs early; never fails the task and records what it stopped."""

    type: Literal["teardown_sandboxes"] = "teardown_sandboxes"
    agent_names: list[AgentRef] | None = None
    """Agents to stop; every agent its ancestors deployed when omitted."""
    env_ids: list[EnvRef] | None = None
    """Envs to stop; every env its ancestors deployed when omitted."""


definition = StepDefinition(TeardownSandboxesStep)
