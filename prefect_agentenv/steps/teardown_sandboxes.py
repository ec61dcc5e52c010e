"""teardown_sandboxes: stop what the run deployed, best effort, before the run ends."""

from __future__ import annotations

from typing import Literal

from prefect_agentenv.context import RunContext, StoppedEarly
from prefect_agentenv.runtime.resources.run import current_run
from prefect_agentenv.steps.base import AgentRef, EnvRef, SandboxRef, StepModel
from prefect_agentenv.steps.registry import StepDefinition


class TeardownSandboxesStep(StepModel):
    """Stops deployed agents and envs early; never fails the task and records what it stopped."""

    type: Literal["teardown_sandboxes"] = "teardown_sandboxes"
    agent_names: list[AgentRef] | None = None
    """Agents to stop; every agent its ancestors deployed when omitted."""
    env_ids: list[EnvRef] | None = None
    """Envs to stop; every env its ancestors deployed when omitted."""
    sandbox_names: list[SandboxRef] | None = None
    """deploy_sandbox sandboxes to remove; every one its ancestors deployed when omitted."""


async def run(step: TeardownSandboxesStep, ctx: RunContext) -> RunContext:
    """Stop the named (or all visible) agents, then envs; record each outcome in metadata.teardowns."""
    registry = current_run().teardown
    agents = set(ctx.deployed_agents if step.agent_names is None else step.agent_names)
    envs = set(ctx.deployed_envs if step.env_ids is None else step.env_ids)
    sandboxes = set(ctx.deployed_sandboxes if step.sandbox_names is None else step.sandbox_names)
    # Agents first: they hold connections to the envs.
    targets = [e for e in registry.pending(kind="agent") if e.key in agents]
    targets += [e for e in registry.pending(kind="env") if e.key in envs]
    targets += [e for e in registry.pending(kind="sandbox") if e.key is not None and e.key in sandboxes]
    stopped = []
    for entry in targets:
        record = await registry.stop(entry)
        stopped.append(StoppedEarly(kind=entry.kind, name=entry.key, label=entry.label, ok=record.ok,
                                    error=record.error))
    teardowns = ctx.metadata.teardowns
    teardowns[step.id] = stopped
    return ctx


definition = StepDefinition(TeardownSandboxesStep, run)
