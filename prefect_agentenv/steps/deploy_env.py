"""deploy_env: start an instance of a registered env for this run."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from prefect_agentenv.steps.base import Provides, StepModel
from prefect_agentenv.steps.registry import StepDefinition


class DeployEnvStep(StepModel):
    """Deploys a registered env as a new instance; later steps find it by env_id."""

    type: Literal["deploy_env"] = "deploy_env"
    env_id: Annotated[str, Provides("env")]
    """Registry id of the env (an AgentEnvironment block or a reference env)."""
    startup_timeout_seconds: float | None = Field(default=None, gt=0)
    """How long the instance may take to answer its card; the env's registered value when omitted."""

    accepted_but_ignored = ("env_state_type", "env_state_instance_id", "priority", "metadata")


definition = StepDefinition(DeployEnvStep)
