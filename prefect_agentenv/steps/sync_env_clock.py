"""sync_env_clock: set or advance a deployed env's virtual clock."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import model_validator

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

    @model_validator(mode="after")
    def _one_change(self) -> SyncEnvClockStep:
        if (self.time is None) == (self.advance_seconds is None):
            raise ValueError("give exactly one of time or advance_seconds")
        return self


definition = StepDefinition(SyncEnvClockStep)
