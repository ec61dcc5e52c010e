"""deploy_sandbox: a work folder with no agent in it, for files, probes and scripts."""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

from pydantic import Field, model_validator

from prefect_agentenv.context import DeployedSandbox, RunContext
from prefect_agentenv.exceptions import StepError
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.run_services.sandboxes import register_sandbox
from prefect_agentenv.runtime.resources.run import current_run
from prefect_agentenv.runtime.resources.sandbox import create_sandbox
from prefect_agentenv.steps.base import Provides, StepModel
from prefect_agentenv.steps.registry import StepDefinition


class DeploySandboxStep(StepModel):
    """Creates a sandbox folder named sandbox_name; later steps reach it by that name."""

    type: Literal["deploy_sandbox"] = "deploy_sandbox"
    sandbox_name: Annotated[str, Provides("sandbox")] = Field(min_length=1)
    """Name later steps use for this sandbox (load_artifact, verify_sandbox, run_code, collect_artifacts)."""
    sandbox_mode: Literal["vm", "dir"] = "vm"
    """AgentEnv's ``vm`` (a machine of its own) is a folder here, with the same absolute sandbox paths."""
    env_vars: dict[str, str] = Field(default_factory=dict)
    """Environment variables of the commands run in the sandbox (probes, scripts)."""

    hosted_only = ("cpu", "memory_mb", "disk_size_gb", "ttl_seconds", "sandbox_type", "network_policy",
                   "exposed_ports", "boot_mode", "port")
    accepted_but_ignored = ("metadata",)

    @classmethod
    def reference_forms(cls, data: JsonObject, notices: list[str]) -> JsonObject:
        """Container sandboxes (``image``, ``sandbox_mode: container``) are refused with the reason."""
        if data.get("image") is not None or data.get("sandbox_mode") == "container":
            raise ValueError("container sandboxes (image, sandbox_mode: container) are not supported: this runner's "
                             "deploy_sandbox makes a local folder sandbox; drop image and use sandbox_mode vm")
        data.pop("image", None)
        return data

    @model_validator(mode="after")
    def _name_is_a_folder_name(self) -> DeploySandboxStep:
        if "/" in self.sandbox_name or self.sandbox_name in (".", ".."):
            raise ValueError("sandbox_name must not contain '/'")
        return self


async def run(step: DeploySandboxStep, ctx: RunContext) -> RunContext:
    """Create the folder (with the standard sandbox folders), register its removal, record it."""
    if step.sandbox_name in ctx.deployed_sandboxes:
        raise StepError(f"Sandbox '{step.sandbox_name}' is already deployed", step=step)
    run_ = current_run()
    sandbox = create_sandbox(run_.workdir, step.sandbox_name)
    if not run_.keep:
        async def remove() -> None:
            sandbox.remove()

        run_.teardown.add(f"sandbox {step.sandbox_name}", remove, owner_step=step.id, kind="sandbox",
                          key=step.sandbox_name)
    deployed = DeployedSandbox(sandbox_name=step.sandbox_name, sandbox=str(sandbox.root),
                               instance_id=f"sandbox-{step.sandbox_name}-{uuid.uuid4().hex[:8]}")
    register_sandbox(run_, deployed, sandbox, {**sandbox.env(), **step.env_vars})
    ctx.deployed_sandboxes[step.sandbox_name] = deployed
    return ctx


definition = StepDefinition(DeploySandboxStep, run)
