"""verify_sandbox: probe an agent's sandbox (files, contents, commands)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from prefect_agentenv.steps.base import Aggregator, AgentRef, VerifierStep
from prefect_agentenv.steps.registry import StepDefinition


class SandboxCheck(BaseModel):
    """One probe of the sandbox."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    id: str = Field(min_length=1)
    kind: Literal["file_exists", "file_contains", "command_succeeds"]
    path: str | None = None
    """Sandbox path (absolute sandbox paths map under the sandbox root)."""
    text: str | None = None
    """Text file_contains looks for."""
    command: list[str] | None = None
    """argv run in the sandbox by command_succeeds."""
    timeout_seconds: float = Field(default=60, gt=0)
    weight: float = 1.0

    @model_validator(mode="after")
    def _fields_for_kind(self) -> SandboxCheck:
        needs = {"file_exists": ("path",), "file_contains": ("path", "text"), "command_succeeds": ("command",)}
        missing = [f for f in needs[self.kind] if getattr(self, f) is None]
        if missing:
            raise ValueError(f"check '{self.id}' of kind {self.kind} needs {', '.join(missing)}")
        return self


class VerifySandboxStep(VerifierStep):
    """Scores an agent's sandbox by file and command probes."""

    type: Literal["verify_sandbox"] = "verify_sandbox"
    agent_name: AgentRef
    """The deployed agent whose sandbox is probed."""
    checks: list[SandboxCheck] = Field(min_length=1)
    score_aggregator: Aggregator = "all_pass"


definition = StepDefinition(VerifySandboxStep)
