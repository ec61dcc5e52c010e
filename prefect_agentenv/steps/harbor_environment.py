"""harbor_environment: a Harbor task's environment, its image built once (cached by content) and started.

The container is the agent's environment for the rest of the run (docs/harbor-tasks.md): the oracle's
``solve.sh``, the shared verifier's ``test.sh`` and the agent's commands run in it, in its workdir.
It is removed with the run (kept with ``--keep``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from prefect_agentenv.context import DeployedSandbox, RunContext
from prefect_agentenv.exceptions import DeployError, StepError
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.runtime.resources.run import current_run
from prefect_agentenv.steps.base import Provides, StepModel
from prefect_agentenv.steps.registry import StepDefinition

if TYPE_CHECKING:
    from prefect_agentenv.documents.harbor.folder import HarborTask
    from prefect_agentenv.runtime.harbor.images import ImageConfig, Sidecar


class HarborEnvironmentStep(StepModel):
    """Builds (or finds) the image of a Harbor task folder's environment and starts it."""

    type: Literal["harbor_environment"] = "harbor_environment"
    task_dir: str = Field(min_length=1)
    """The Harbor task folder: its absolute path, or ``sha256:<hex>``, the folder kept by content in the
    artifact store (a benchmark run's snapshots and published versions name it so)."""
    sandbox_name: Annotated[str, Provides("sandbox")] = "environment"
    """Name the agent and verifier steps reach the environment by."""
    task_toml_sha256: str | None = None
    """The task.toml's hash when the task was compiled: a changed file fails the run rather than run another task."""
    environment_sha256: str | None = None
    """The environment/ folder's hash when the task was compiled (the setup's fingerprint: the document's
    snapshot holds it, so a changed Dockerfile is a changed setup)."""
    mcp_servers: list[str] = Field(default_factory=list)
    """Names of the task's ``[[environment.mcp_servers]]``."""
    given_mcp_servers: list[str] = Field(default_factory=list)
    """Those of them the agent is given: stdio ones with a command (started in the environment) and those with a
    URL (reached in the environment's network, a compose sidecar's). Another is read, not given (a notice says)."""
    not_applied: list[str] = Field(default_factory=list)
    """The task's settings this runner reads and does not apply, each with why (``validate`` prints them)."""

    @classmethod
    def reference_forms(cls, data: JsonObject, notices: list[str]) -> JsonObject:
        """Say, at ``validate`` and in the run's plan, which of the task's settings are not applied: MCP servers
        not given to the agent, and the settings ``not_applied`` names."""
        said = data.get("not_applied")
        if isinstance(said, list):
            notices.extend(f"read, not applied: {entry}" for entry in said)
        names, listed = data.get("mcp_servers"), data.get("given_mcp_servers")
        given = set(map(str, listed)) if isinstance(listed, list) else set()
        left = [str(name) for name in names if str(name) not in given] if isinstance(names, list) else []
        if left:
            notices.append(f"[[environment.mcp_servers]] {', '.join(left)}: read, not given to the agent: a stdio "
                           "server needs a command, and a server at a URL its url")
        return data


@dataclass(frozen=True)
class RunningEnvironment:
    """The started environment: its container, the image's settings and the workdir commands run in."""

    container: str
    image: ImageConfig
    workdir: str
    task: HarborTask


def load_task(task_dir: str, step: StepModel) -> HarborTask:
    """The task folder, loaded again at run time (a folder changed into an invalid one is the step's error);
    a kept folder (``sha256:…``) is unpacked from the artifact store the first time."""
    from prefect_agentenv.documents.harbor.folder import HarborTaskError, load_task_folder
    from prefect_agentenv.documents.harbor.kept_tasks import task_folder

    try:
        return load_task_folder(task_folder(task_dir))
    except HarborTaskError as exc:
        raise StepError(f"the Harbor task is no longer valid: {exc}", step=step) from None


async def running_environment(ctx: RunContext, sandbox_name: str, task_dir: str, step: StepModel) -> RunningEnvironment:
    """The environment an ancestor started under ``sandbox_name``."""
    from prefect_agentenv.runtime.harbor.images import inspect_image

    deployed = ctx.deployed_sandboxes.get(sandbox_name)
    if deployed is None or deployed.image is None:
        raise StepError(f"no Harbor environment '{sandbox_name}' was started before this step", step=step)
    image = await inspect_image(deployed.image, remembered=True)
    if image is None:
        raise StepError(f"the environment's image {deployed.image} is gone from the docker daemon", step=step)
    task = load_task(task_dir, step)
    return RunningEnvironment(deployed.instance_id, image, task.config.environment.workdir or image.workdir, task)


async def run(step: HarborEnvironmentStep, ctx: RunContext) -> RunContext:
    """Check the daemon, build or find the image, start the container, wait for its healthcheck."""
    from prefect_agentenv.runtime.harbor.images import ImageError, ensure_image, source_of
    from prefect_agentenv.runtime.launch.docker import DockerLauncher

    task = load_task(step.task_dir, step)
    if step.task_toml_sha256 is not None and task.task_toml_sha256 != step.task_toml_sha256:
        raise StepError(f"{task.root}/task.toml changed since the task was read: run it again", step=step)
    if not await DockerLauncher.available():
        raise DeployError("a Harbor task runs in a docker environment, and no docker daemon answers here "
                          "(`docker info` failed)", step=step)
    env_config = task.config.environment
    try:
        image = await ensure_image(task.slug, source_of(task.environment, env_config.docker_image),
                                   build_timeout=env_config.build_timeout_sec)
    except ImageError as exc:
        raise DeployError(f"the environment's image: {exc}", step=step) from None
    run_ = current_run()
    workdir = env_config.workdir or image.workdir
    container = await start_container(step, task, image, workdir)
    await _healthy(step, task, container, workdir)
    folder = run_.step_folder("harbor", step.id)
    ctx.deployed_sandboxes[step.sandbox_name] = DeployedSandbox(
        sandbox_name=step.sandbox_name, sandbox=str(folder), instance_id=container, image=image.tag)
    return ctx


async def start_container(step: StepModel, task: HarborTask, image: ImageConfig, workdir: str,
                          workspace: Path | None = None) -> str:
    """A container of the task's image with its variables, limits and network, and its compose sidecars in its
    network namespace (each image built once, cached by content), removed with the run."""
    from prefect_agentenv.runtime.harbor.environment import (
        HarborEnvironmentError,
        network_for,
        start_environment,
        start_sidecar,
    )
    from prefect_agentenv.runtime.harbor.images import ImageError, ensure_image, sidecars_of

    env_config = task.config.environment
    mode = task.config.agent.network_mode or env_config.network_mode
    try:
        sidecars = sidecars_of(task.environment)
        images = [await ensure_image(f"{task.slug}-{s.name}", s.source, build_timeout=env_config.build_timeout_sec)
                  for s in sidecars]
    except ImageError as exc:
        raise DeployError(f"the environment's sidecars: {exc}", step=step) from None
    try:
        container = await start_environment(image.tag, workdir=workdir, env=_env(task, step),
                                            network=await network_for(mode), run_id=current_run().run_id,
                                            cpus=env_config.cpus, memory_mb=env_config.memory_mb, workspace=workspace,
                                            hosts=tuple(s.name for s in sidecars))
    except HarborEnvironmentError as exc:
        raise DeployError(f"the environment did not start: {exc}", step=step) from None
    _register_removal(step, container)
    try:
        started = [await start_sidecar(built.tag, main=container, service=sidecar.name, command=sidecar.command,
                                       entrypoint=sidecar.entrypoint, env=dict(sidecar.environment),
                                       run_id=current_run().run_id)
                   for sidecar, built in zip(sidecars, images, strict=True)]
    except HarborEnvironmentError as exc:
        raise DeployError(f"the environment did not start: {exc}", step=step) from None
    for sidecar, name in zip(sidecars, started, strict=True):
        await _sidecar_healthy(step, sidecar, name)
    return container


async def _sidecar_healthy(step: StepModel, sidecar: Sidecar, container: str) -> None:
    """A sidecar's compose healthcheck passed (once a second, within its start period and retries), as compose's
    ``depends_on: condition: service_healthy`` waits for it; nothing to wait for without one."""
    import asyncio
    import time

    from prefect_agentenv.runtime.harbor.environment import exec_argv

    if sidecar.health is None:
        return
    deadline, last = time.monotonic() + sidecar.health_seconds, ""
    while time.monotonic() < deadline:
        done = await exec_argv(container, list(sidecar.health), user=None, timeout=30)
        if done.exit_code == 0:
            return
        last = done.output.strip()[-300:]
        await asyncio.sleep(1.0)
    raise DeployError(f"the environment's sidecar '{sidecar.name}' was not healthy within "
                      f"{sidecar.health_seconds:g}s: {last}", step=step)


def _env(task: HarborTask, step: StepModel) -> dict[str, str]:
    """``[environment].env`` with ``${VAR}`` / ``${VAR:-default}`` filled from this machine."""
    from prefect_agentenv.documents.loading import resolve_env_vars

    try:
        filled: dict[str, str] = resolve_env_vars(dict(task.config.environment.env))
    except KeyError as exc:
        raise StepError(f"[environment].env names ${{{exc.args[0]}}}, which is not set here", step=step) from None
    current_run().redact.update(v for k, v in filled.items() if task.config.environment.env[k] != v and v)
    return filled


def _register_removal(step: StepModel, container: str) -> None:
    from prefect_agentenv.runtime.harbor.environment import remove_environment

    run_ = current_run()
    if run_.keep:
        return

    async def remove() -> None:
        await remove_environment(container)

    run_.teardown.add(f"harbor environment {container}", remove, owner_step=step.id, kind="sandbox")


async def _healthy(step: HarborEnvironmentStep, task: HarborTask, container: str, workdir: str) -> None:
    """``[environment.healthcheck]``: its command must succeed within its retries before the agent starts."""
    import asyncio

    from prefect_agentenv.runtime.harbor.environment import exec_in

    check = task.config.environment.healthcheck
    if check is None:
        return
    await asyncio.sleep(check.start_period_sec)
    last = ""
    for _ in range(check.retries + 1):
        done = await exec_in(container, check.command, user=None, timeout=check.timeout_sec, workdir=workdir)
        if done.exit_code == 0:
            return
        last = done.output.strip()[-300:]
        await asyncio.sleep(check.interval_sec)
    raise DeployError(f"the environment's healthcheck did not pass after {check.retries + 1} tries: {last}", step=step)


definition = StepDefinition(HarborEnvironmentStep, run)
