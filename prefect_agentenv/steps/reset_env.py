"""reset_env: empty a deployed env's data through its data plane (data/reset)."""

from __future__ import annotations

from typing import Literal

from prefect_agentenv.context import RunContext
from prefect_agentenv.exceptions import ProtocolError
from prefect_agentenv.run_services.clients import as_step_error, env_client
from prefect_agentenv.steps.base import EnvRef, StepModel
from prefect_agentenv.steps.registry import StepDefinition


class ResetEnvStep(StepModel):
    """Calls data/reset on a deployed env."""

    type: Literal["reset_env"] = "reset_env"
    env_id: EnvRef
    """The deployed env to reset."""


async def run(step: ResetEnvStep, ctx: RunContext) -> RunContext:
    """Empty the env's data (data/reset)."""
    try:
        await env_client(ctx, step.env_id, step).data_reset()
    except ProtocolError as exc:
        raise as_step_error(exc, step, f"resetting env '{step.env_id}'") from exc
    return ctx


definition = StepDefinition(ResetEnvStep, run)
