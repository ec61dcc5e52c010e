"""sync_env_clock: set or advance a deployed env's virtual clock."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import model_validator

from prefect_agentenv.steps.base import EnvRef, StepModel
from prefect_agentenv.context import RunContext
from prefect_agentenv.exceptions import ProtocolError
from prefect_agentenv.steps.services import as_step_error, env_client
from prefect_agentenv.steps.registry import StepDefinition


class SyncEnvClockStep(StepModel):
    """Sets the env's clock (clock extension) to a time, or moves it forward."""

    type: Literal["sync_env_clock"] = "sync_env_clock"
    env_id: EnvRef
    """The deployed env whose clock is set."""
    time: datetime | None = None
    """Set the clock to this instant (ISO 8601)."""
    advance_seconds: float | None = None
    """Move the clock forward by this many seconds (due triggers fire)."""

    @model_validator(mode="after")
    def _one_change(self) -> SyncEnvClockStep:
        if (self.time is None) == (self.advance_seconds is None):
            raise ValueError("give exactly one of time or advance_seconds")
        return self


async def run(step: SyncEnvClockStep, ctx: RunContext) -> RunContext:
    """Set or advance the env's virtual clock; what it reports is kept in metadata.env_clocks[step id]."""
    client = env_client(ctx, step.env_id, step)
    try:
        if step.time is not None:
            clock = await client.clock_set(step.time)
        else:
            clock = await client.clock_advance(step.advance_seconds or 0.0)
    except ProtocolError as exc:
        raise as_step_error(exc, step, f"setting the clock of env '{step.env_id}'") from exc
    clocks = ctx.metadata.model_extra.setdefault("env_clocks", {})  # type: ignore[union-attr]
    clocks[step.id] = {"env_id": step.env_id, **clock.model_dump(mode="json")}
    return ctx


definition = StepDefinition(SyncEnvClockStep, run)
