"""register_env_triggers: register timed events (for example an email arriving) with an env."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from prefect_agentenv.steps.base import EnvRef, StepModel
from prefect_agentenv.steps.registry import StepDefinition


class RegisterEnvTriggersStep(StepModel):
    """Registers triggers through the env's trigger extension."""

    type: Literal["register_env_triggers"] = "register_env_triggers"
    env_id: EnvRef
    """The deployed env to register triggers with."""
    triggers: list[dict[str, Any]] = Field(min_length=1)
    """Triggers as the env defines them, for example {at, action, data}."""


definition = StepDefinition(RegisterEnvTriggersStep)
