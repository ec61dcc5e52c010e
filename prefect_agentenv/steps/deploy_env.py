"""deploy_env: start an instance of a registered env for this run."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from prefect_agentenv.context import DeployedEnv, RunContext
from prefect_agentenv.exceptions import DeployError, ProtocolError, StepError
from prefect_agentenv.run_services.clients import http_client, launchers
from prefect_agentenv.runtime.resources.run import current_run
from prefect_agentenv.steps.base import Provides, StepModel
from prefect_agentenv.steps.registry import StepDefinition

if TYPE_CHECKING:  # the runtime loads on use: `validate` imports step modules and stays light
    from prefect_agentenv.runtime.launch.base import Instance, LaunchSpec

logger = logging.getLogger("prefect_agentenv.envs")


class DeployEnvStep(StepModel):
    """Deploys a registered env as a new instance; later steps find it by env_id."""

    type: Literal["deploy_env"] = "deploy_env"
    env_id: Annotated[str, Provides("env")]
    """Registry id of the env (an AgentEnvironment block or a reference env)."""
    startup_timeout_seconds: float | None = Field(default=None, gt=0)
    """How long the instance may take to answer its card; the env's registered value when omitted."""

    accepted_but_ignored = ("env_state_type", "env_state_instance_id", "priority", "metadata", "artifact_id",
                            "artifact_version")
    hosted_only = ("ttl_seconds", "disk_size_gb", "gateway_mode", "cpu", "memory_mb", "sandbox_type")
    reference_aliases = {"env_version": "version"}


async def run(step: DeployEnvStep, ctx: RunContext) -> RunContext:
    """Resolve the env, start it, register its teardown, and record where its MCP endpoint is."""
    from prefect_agentenv.resolution.servers import resolve_env
    from prefect_agentenv.run_services.pooling import resolve_once

    if step.env_id in ctx.deployed_envs:
        raise StepError(f"Env '{step.env_id}' is already deployed", step=step)
    resolved = await resolve_once(("env", step.env_id), lambda: resolve_env(step.env_id))
    spec = resolved.spec
    if step.startup_timeout_seconds:
        spec = spec.model_copy(update={"startup_timeout_seconds": step.startup_timeout_seconds})
    instance = await _start(step, spec)
    mcp_url = await _mcp_url(step, instance)
    ctx.deployed_envs[step.env_id] = DeployedEnv(
        env_id=step.env_id,
        version=step.version or resolved.version,
        instance_id=instance.instance_id,
        mcp_url=mcp_url,
        base_url=instance.base_url,
    )
    return ctx


async def _start(step: DeployEnvStep, spec: LaunchSpec) -> Instance:
    from prefect_agentenv.run_services.concurrency_slots import hold_slot
    from prefect_agentenv.run_services.pooling import pooled_env

    run = current_run()
    run.redact.update(spec.secret_values().values())  # a failing env may echo its environment
    pooled = await pooled_env(step, step.env_id, spec)
    if pooled is not None:
        return pooled
    await hold_slot(run, "env", step.env_id, owner_step=step.id)
    launcher = launchers(run).for_spec(spec)
    try:
        instance = await launcher.start(spec, name=step.env_id, workdir=run.workdir / "envs")
    except DeployError as exc:
        exc.step_id, exc.step_type = step.id, step.type
        raise
    run.teardown.add(f"env {step.env_id} ({instance.instance_id})", lambda: launcher.stop(instance),
                     owner_step=step.id, kind="env", key=step.env_id)
    return instance


async def _mcp_url(step: DeployEnvStep, instance: Instance) -> str:
    """The card's MCP interface when it declares one, else the launcher's default path."""
    from prefect_agentenv.protocols.env import EnvClient

    run = current_run()
    # Registered as the instance's data-plane client, so the steps after this one reuse the card.
    client = run.services.env_clients.setdefault(
        instance.instance_id, EnvClient(instance.base_url, http_client(run), name=step.env_id))
    try:
        card = await client.card()
    except ProtocolError as exc:
        if exc.code != 404:  # no card at all is an MCP-only server; anything else is worth saying
            logger.warning("deploy_env %s: %s; its MCP endpoint is taken as %s", step.id, exc, instance.mcp_url)
        return instance.mcp_url
    return card.mcp_url or instance.mcp_url


definition = StepDefinition(DeployEnvStep, run)
