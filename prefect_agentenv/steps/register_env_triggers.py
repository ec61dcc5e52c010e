"""register_env_triggers: register timed events (for example an email arriving) with an env."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from prefect_agentenv.context import RunContext
from prefect_agentenv.exceptions import ProtocolError
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.run_services.clients import as_step_error, env_client
from prefect_agentenv.steps.base import EnvRef, StepModel
from prefect_agentenv.steps.registry import StepDefinition


class RegisterEnvTriggersStep(StepModel):
    """Registers triggers through the env's trigger extension."""

    type: Literal["register_env_triggers"] = "register_env_triggers"
    env_id: EnvRef
    """The deployed env to register triggers with."""
    triggers: list[JsonObject] = Field(min_length=1)
    """Triggers as the env defines them, for example {at, action, data}."""

    accepted_but_ignored = ("watch_roles", "executor_agent_name", "executor_timeout_seconds", "executor_hours",
                            "await_fired", "await_timeout_seconds")


async def run(step: RegisterEnvTriggersStep, ctx: RunContext) -> RunContext:
    """Register the triggers; what the env accepted is kept in metadata.env_triggers[step id]."""
    try:
        registered = await env_client(ctx, step.env_id, step).register_triggers(step.triggers)
    except ProtocolError as exc:
        raise as_step_error(exc, step, f"registering triggers with env '{step.env_id}'") from exc
    triggers = ctx.metadata.env_triggers
    triggers[step.id] = [t.model_dump(mode="json") for t in registered]
    return ctx


definition = StepDefinition(RegisterEnvTriggersStep, run)
