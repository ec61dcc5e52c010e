"""sync_env_clock: set or advance a deployed env's virtual clock."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import model_validator

from prefect_agentenv.context import RunContext
from prefect_agentenv.exceptions import ProtocolError
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.run_services.clients import as_step_error, env_client
from prefect_agentenv.steps.base import EnvRef, StepModel
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
    frozen: bool | None = None
    """With time: stop the clock there (true) or let it run at real speed from there (false)."""

    accepted_but_ignored = ("tolerate_missing_sync_time", "timeout_seconds")
    reference_aliases = {"virtual_time": "time"}

    reference_fields = {"virtual_seconds_per_real_second": "AgentEnv's clock speed: 0 is frozen, 1 real time."}

    @classmethod
    def reference_forms(cls, data: JsonObject, notices: list[str]) -> JsonObject:
        """AgentEnv's clock speed: 0 is a frozen clock, 1 real time; other speeds run at real time."""
        if "virtual_seconds_per_real_second" not in data:
            return data
        speed = data.pop("virtual_seconds_per_real_second")
        if not isinstance(speed, int | float) or isinstance(speed, bool) or speed < 0:
            raise ValueError(f"virtual_seconds_per_real_second must be a number >= 0, got {speed!r}")
        data.setdefault("frozen", speed == 0)
        if speed not in (0, 1):
            notices.append(f"virtual_seconds_per_real_second={speed:g}: the clock extension here runs at real "
                           "speed or frozen; it runs at real speed (advance it with advance_seconds)")
        return data

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
            clock = await client.clock_set(step.time, frozen=step.frozen)
        else:
            clock = await client.clock_advance(step.advance_seconds or 0.0)
    except ProtocolError as exc:
        raise as_step_error(exc, step, f"setting the clock of env '{step.env_id}'") from exc
    clocks = ctx.metadata.env_clocks
    clocks[step.id] = {"env_id": step.env_id, **clock.model_dump(mode="json")}
    return ctx


definition = StepDefinition(SyncEnvClockStep, run)
