"""collect_artifacts: copy files out of an agent's sandbox into the artifact store."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, model_validator

from prefect_agentenv.artifacts import ArtifactBackend
from prefect_agentenv.artifacts.keys import UnsafeKeyError, check_id, check_path
from prefect_agentenv.context import ArtifactRef, CollectedFiles, RunContext
from prefect_agentenv.exceptions import AgentEnvError, StepError
from prefect_agentenv.run_services.clients import artifact_store, as_step_error
from prefect_agentenv.run_services.sandboxes import sandbox_target
from prefect_agentenv.runtime.resources.run import current_run
from prefect_agentenv.runtime.resources.sandbox import Sandbox
from prefect_agentenv.steps.base import AgentRef, FieldError, NameKind, SandboxPath, SandboxRef, StepModel
from prefect_agentenv.steps.registry import StepDefinition


def _under_base_path(value: str) -> str:
    """A file below base_path, written as the relative path it is stored under."""
    if ".." in value.split("/"):
        raise FieldError(f"artifact path {value!r} has a '..' segment: artifact paths stay under base_path",
                         hint="set base_path to a folder that holds every file to collect, and name them below it")
    try:
        check_path(value, "artifact path")
    except UnsafeKeyError as exc:
        raise FieldError(str(exc).split(":")[0], hint="write a path relative to base_path, such as 'reports/q3.png'") from None
    return value


class CollectArtifactsStep(StepModel):
    """Collects files from an agent's sandbox as file artifacts grouped in one universe."""

    type: Literal["collect_artifacts"] = "collect_artifacts"
    agent_name: AgentRef | None = None
    """The deployed agent whose sandbox is read."""
    sandbox_name: SandboxRef | None = None
    """Or a sandbox a deploy_sandbox step made."""
    base_path: SandboxPath = "/app/artifact"
    """Folder in the sandbox to collect from."""
    artifact_paths: list[Annotated[str, AfterValidator(_under_base_path)]] | None = None
    """Files relative to base_path (each also names its stored file); every file under it when omitted."""
    artifact_id: str | None = None
    """Id of the universe to publish; ``<task id>-<step id>`` when omitted."""

    produces_artifact_field = "artifact_id"
    accepted_but_ignored = ("env_id", "container_name", "artifacts_key", "manifest_step_id", "exclude_basenames",
                            "universe_id_suffix")

    @model_validator(mode="after")
    def _one_sandbox(self) -> CollectArtifactsStep:
        if (self.agent_name is None) == (self.sandbox_name is None):
            raise ValueError("give exactly one of agent_name (an agent's sandbox) or sandbox_name (a deploy_sandbox one)")
        return self

    def provided(self) -> list[tuple[NameKind, str, tuple[str | int, ...]]]:
        """A collect step is named by its own id (artifact_from_step_id refers to it)."""
        return [*super().provided(), ("collect", self.id, ("id",))]


async def run(step: CollectArtifactsStep, ctx: RunContext) -> RunContext:
    """Find the files, publish each as a file artifact, group them in one universe, record the URLs."""
    run_ = current_run()
    sandbox, _, label = sandbox_target(ctx, step, agent_name=step.agent_name, sandbox_name=step.sandbox_name)
    files, missing = _select(step, sandbox)
    if step.artifact_paths and not files:
        raise StepError(f"none of the named files could be read under {step.base_path}: {', '.join(missing)}",
                        step=step)
    record = CollectedFiles(artifacts={}, file_artifact_universe=None, missing=missing)
    if files:
        universe_id = step.artifact_id or _safe(f"{run_.task_id}-{step.id}")
        try:
            # Checked before any file is published: a bad id must leave nothing half-stored.
            check_id(universe_id)
        except UnsafeKeyError as exc:
            raise StepError(f"artifact_id: {exc}", step=step) from None
        try:
            urls, universe = await asyncio.to_thread(_publish, await artifact_store(run_), universe_id, files)
        except AgentEnvError as exc:
            raise as_step_error(exc, step, f"storing files collected from {label}") from exc
        record.artifacts, record.file_artifact_universe = urls, universe
    ctx.metadata.collected_artifacts[step.id] = record
    return ctx


def _select(step: CollectArtifactsStep, sandbox: Sandbox) -> tuple[dict[str, Path], list[str]]:
    """Relative path → host path of the files to collect, and the named files that are missing."""
    try:
        base = sandbox.path(step.base_path)
    except (AgentEnvError, ValueError) as exc:
        raise StepError(f"base_path {step.base_path!r}: {exc}", step=step) from None
    if step.artifact_paths is None:
        names = sandbox.list_files(step.base_path) if base.is_dir() else []
        return {n: base / n for n in names}, []
    found: dict[str, Path] = {}
    missing: list[str] = []
    for rel in step.artifact_paths:
        try:
            host = sandbox.path(f"{step.base_path.rstrip('/')}/{rel}")
        except (AgentEnvError, ValueError) as exc:
            raise StepError(f"artifact path {rel!r}: {exc}", step=step) from None
        if host.is_file() and not host.is_symlink():
            found[rel] = host
        else:
            missing.append(rel)
    return found, missing


def _publish(store: ArtifactBackend, universe_id: str, files: dict[str, Path]) -> tuple[dict[str, str], ArtifactRef]:
    urls: dict[str, str] = {}
    members = []
    for rel, host in sorted(files.items()):
        meta = store.publish_files(_safe(f"{universe_id}--{rel}"), {rel: host})
        members.append(meta.ref)
        urls[rel] = store.file_url(meta, rel)
    universe = store.publish_universe(universe_id, members)
    return urls, ArtifactRef(id=universe.id, version=universe.version)


def _safe(value: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", value).strip("-.")[:200] or "collected"


definition = StepDefinition(CollectArtifactsStep, run)
