"""deploy_agent: start a registered A2A agent in its own sandbox and connect it to envs."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from prefect_agentenv.steps.base import EnvRef, Provides, StepModel
from prefect_agentenv.steps.registry import StepDefinition


class Skill(BaseModel):
    """A skill registered with the agent through its skill-config extension."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)

    name: str
    """Skill name."""
    description: str | None = None
    content: str | None = None
    """The skill's instructions (for example a SKILL.md body)."""


class DeployAgentStep(StepModel):
    """Deploys an agent, gives it every env in env_ids, and names it for the rest of the run."""

    type: Literal["deploy_agent"] = "deploy_agent"
    a2a_agent_id: str = Field(min_length=1)
    """Registry id of the agent (an A2AAgent block or a reference agent)."""
    agent_name: Annotated[str, Provides("agent")] = Field(min_length=1)
    """Name later steps use for this agent."""
    env_ids: list[EnvRef] = Field(default_factory=list)
    """Deployed envs whose MCP endpoints are given to the agent."""
    system_prompt: str | None = None
    model: str | None = None
    """Model the agent should use; the run's default agent model when omitted."""
    skills: list[Skill] = Field(default_factory=list)
    agent_config: dict[str, Any] = Field(default_factory=dict)
    """Extra agent-config fields, filtered to what the agent's card supports."""
    startup_timeout_seconds: float | None = Field(default=None, gt=0)

    accepted_but_ignored = (
        "env_step_id", "agent_description", "litellm_base_url", "priority", "network_policy",
        "sandbox_name", "enable_docker", "metadata", "snapshot_id", "restore_snapshot_id",
        "snapshot_config", "changelog",
    )


definition = StepDefinition(DeployAgentStep)
