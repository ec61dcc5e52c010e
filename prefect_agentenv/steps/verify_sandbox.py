"""verify_sandbox: probe an agent's sandbox (files, contents, commands)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

import asyncio
import os

from prefect_agentenv.context import RunContext
from prefect_agentenv.exceptions import AgentEnvError
from prefect_agentenv.grading.verification import scored
from prefect_agentenv.runtime.command import run_bounded
from prefect_agentenv.runtime.run import current_run
from prefect_agentenv.runtime.sandbox import Sandbox
from prefect_agentenv.runtime.sweep import RUN_MARKER
from prefect_agentenv.steps.agent_support import deployed_agent, sandbox_of
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


async def run(step: VerifySandboxStep, ctx: RunContext) -> RunContext:
    """Run every probe against the agent's sandbox; one row each."""
    sandbox = sandbox_of(current_run(), deployed_agent(ctx, step.agent_name, step))
    rows = [await _probe(sandbox, check, step.scoring_env) for check in step.checks]
    ctx.metadata.verifications[step.verifier_id] = scored(rows, aggregator=step.score_aggregator,
                                                          weight=step.weight, fmt="sandbox_checks")
    return ctx


async def _probe(sandbox: Sandbox, check: SandboxCheck, scoring_env: dict[str, str]) -> dict[str, object]:
    if check.kind == "command_succeeds":
        ok, why = await _command(sandbox, check, scoring_env)
    else:
        ok, why = _file(sandbox, check)
    return {"id": check.id, "result": "pass" if ok else "fail", "score": 1.0 if ok else 0.0,
            "weight": check.weight, "justification": why}


def _file(sandbox: Sandbox, check: SandboxCheck) -> tuple[bool, str]:
    try:
        host = sandbox.path(check.path or "")
    except (AgentEnvError, ValueError) as exc:
        return False, f"{check.path}: {exc}"
    if not host.is_file():
        return False, f"{check.path} does not exist"
    if check.kind == "file_exists":
        return True, f"{check.path} exists"
    text = host.read_text(encoding="utf-8", errors="replace")
    found = (check.text or "") in text
    return found, f"{check.path} {'contains' if found else 'does not contain'} {check.text!r}"


async def _command(sandbox: Sandbox, check: SandboxCheck, scoring_env: dict[str, str]) -> tuple[bool, str]:
    """Run argv in the sandbox (cwd and HOME there), in its own process group, bounded in time and output."""
    argv = check.command or []
    env = {**os.environ, **sandbox.env(), **scoring_env, RUN_MARKER: current_run().run_id}
    try:
        done = await run_bounded(argv, cwd=sandbox.root, env=env, timeout=check.timeout_seconds,
                                 max_output_bytes=64 * 1024, merge_stderr=True)
    except OSError as exc:
        return False, f"{' '.join(argv)} could not start: {exc}"
    if done.timed_out:
        return False, f"{' '.join(argv)} did not finish within {check.timeout_seconds:g}s"
    tail = done.stdout.decode(errors="replace").strip()[-300:]
    return done.returncode == 0, f"{' '.join(argv)} exited {done.returncode}" + (f": {tail}" if tail else "")


definition = StepDefinition(VerifySandboxStep, run)
