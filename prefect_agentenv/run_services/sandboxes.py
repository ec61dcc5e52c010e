"""Reaching a sandbox by name: an agent's (``agent_name``) or a bare one (``sandbox_name``).

``deploy_sandbox`` makes a sandbox with no agent in it; the steps that read or write sandbox
files (load_artifact, verify_sandbox, collect_artifacts, run_code) take either name, as
AgentEnv documents do.
"""

from __future__ import annotations

from prefect_agentenv.context import DeployedSandbox, RunContext
from prefect_agentenv.exceptions import NotInContextError, StepError
from prefect_agentenv.run_services.agents import deployed_agent, sandbox_of
from prefect_agentenv.runtime.resources.run import RunResources, current_run
from prefect_agentenv.runtime.resources.sandbox import Sandbox
from prefect_agentenv.steps.base import StepModel


def deployed_sandbox(ctx: RunContext, sandbox_name: str, step: StepModel) -> DeployedSandbox:
    """The sandbox an ancestor deployed under ``sandbox_name`` (reference wording kept)."""
    found = ctx.deployed_sandboxes.get(sandbox_name)
    if found is None:
        raise NotInContextError(f"Sandbox '{sandbox_name}' not found in context.deployed_sandboxes "
                                f"(deployed: {sorted(ctx.deployed_sandboxes)})", step=step)
    return found


def register_sandbox(run: RunResources, deployed: DeployedSandbox, sandbox: Sandbox, env: dict[str, str]) -> None:
    """Make a bare sandbox reachable by its instance id, with the env vars its commands get."""
    run.services.sandboxes[deployed.instance_id] = sandbox
    run.services.sandbox_env[deployed.instance_id] = dict(env)


def sandbox_env(run: RunResources, instance_id: str) -> dict[str, str]:
    """Env vars a deploy_sandbox step gave its sandbox (none for an agent's)."""
    return dict(run.services.sandbox_env.get(instance_id, {}))


def sandbox_target(ctx: RunContext, step: StepModel, *, agent_name: str | None,
                   sandbox_name: str | None) -> tuple[Sandbox, dict[str, str], str]:
    """The sandbox a step names, the env vars its commands get, and a label for messages."""
    run = current_run()
    if sandbox_name is not None:
        deployed = deployed_sandbox(ctx, sandbox_name, step)
        sandboxes = run.services.sandboxes
        if deployed.instance_id not in sandboxes:
            raise StepError(f"sandbox '{sandbox_name}' has no folder in this run", step=step)
        return sandboxes[deployed.instance_id], sandbox_env(run, deployed.instance_id), f"sandbox '{sandbox_name}'"
    if agent_name is None:
        raise StepError("name a sandbox: agent_name or sandbox_name", step=step)
    agent = deployed_agent(ctx, agent_name, step)
    return sandbox_of(run, agent), {}, f"agent '{agent_name}'"
