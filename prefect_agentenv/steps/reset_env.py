"""reset_env: empty a deployed env's data through its data plane (data/reset)."""

from __future__ import annotations

from typing import Literal

from prefect_agentenv.steps.base import EnvRef, StepModel
from prefect_agentenv.steps.registry import StepDefinition


class ResetEnvStep(StepModel):
    """Calls data/reset on a deployed env."""

    type: Literal["reset_env"] = "reset_env"
    env_id: EnvRef
    """The deployed env to reset."""


definition = StepDefinition(ResetEnvStep)
