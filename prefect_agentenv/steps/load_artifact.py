"""load_artifact: load a stored artifact into an env (data plane) or an agent's sandbox (files)."""

from __future__ import annotations

import asyncio
import mimetypes
from typing import TYPE_CHECKING, Literal

from pydantic import model_validator

from prefect_agentenv.artifacts import ArtifactMetadata
from prefect_agentenv.context import ArtifactRef, LoadedFiles, RunContext
from prefect_agentenv.exceptions import AgentEnvError, StepError
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.run_services.clients import artifact_store, as_step_error, env_client
from prefect_agentenv.run_services.sandboxes import sandbox_target
from prefect_agentenv.runtime.resources.run import current_run
from prefect_agentenv.steps.base import AgentRef, CollectRef, EnvRef, SandboxPath, SandboxRef, StepModel
from prefect_agentenv.steps.registry import StepDefinition

if TYPE_CHECKING:  # the runtime loads on use: `validate` imports step modules and stays light
    from prefect_agentenv.protocols.env import FilePart, Part


class LoadArtifactStep(StepModel):
    """Loads an environment artifact into an env, or file artifacts into an agent's sandbox."""

    type: Literal["load_artifact"] = "load_artifact"
    artifact_id: str | None = None
    """Id of the stored artifact (environment artifact, file artifact or universe)."""
    env_id: EnvRef | None = None
    """Load into this deployed env: data/reset, then data/add with the artifact."""
    agent_name: AgentRef | None = None
    """Copy files into this deployed agent's sandbox."""
    sandbox_name: SandboxRef | None = None
    """Or into a sandbox a deploy_sandbox step made."""
    artifact_from_step_id: CollectRef | None = None
    """Load the universe a collect_artifacts step made (instead of artifact_id)."""
    collected_artifacts_step_id: CollectRef | None = None
    """Older name of artifact_from_step_id."""
    destination_path: SandboxPath = "/tmp/file_artifacts"
    """Folder in the sandbox the files are copied to."""
    reset: bool = True
    """data/reset the env before data/add; false adds to what is already loaded."""
    entity_ids: list[str] | None = None
    """Load only these entities' rows of a dataset artifact, and the rows sharing their ids
    (see docs/benchmarks.md, "Datasets"); the whole artifact when omitted."""

    accepted_but_ignored = ("env_step_id", "container_name", "snapshot_after_load")
    reference_aliases = {"artifact_version": "version"}
    artifact_field = "artifact_id"

    reference_fields = {"artifacts": "AgentEnv's [{id, version}] with one entry, read as artifact_id and version."}

    @classmethod
    def reference_forms(cls, data: JsonObject, notices: list[str]) -> JsonObject:
        """AgentEnv's ``artifacts: [{id, version}]`` with one entry; its ``urls`` downloads are refused."""
        if data.get("urls"):
            raise ValueError("urls (downloads at run time) are not supported: publish the files as an artifact "
                             "(prefect-agentenv artifact put) and name it with artifact_id")
        data.pop("urls", None)
        artifacts = data.pop("artifacts", None)
        if artifacts is None:
            return data
        if not (isinstance(artifacts, list) and len(artifacts) == 1 and isinstance(artifacts[0], dict)):
            raise ValueError("artifacts: one {id, version} entry per load_artifact step (or publish a universe "
                             "holding them all and load that)")
        entry = artifacts[0]
        if "artifact_id" in data:
            raise ValueError("give artifact_id or artifacts, not both")
        data["artifact_id"] = entry.get("id")
        if entry.get("version") is not None:
            data.setdefault("version", str(entry["version"]))
        return data

    @model_validator(mode="after")
    def _one_source_one_target(self) -> LoadArtifactStep:
        if self.collected_artifacts_step_id and self.artifact_from_step_id:
            raise ValueError("give artifact_from_step_id or its older name collected_artifacts_step_id, not both")
        if self.collected_artifacts_step_id:
            # Normalise to the current name so the document round-trips through JSON.
            self.artifact_from_step_id, self.collected_artifacts_step_id = self.collected_artifacts_step_id, None
        if sum(t is not None for t in (self.env_id, self.agent_name, self.sandbox_name)) != 1:
            raise ValueError("give exactly one target: env_id (an env), agent_name (an agent's sandbox) or "
                             "sandbox_name (a deploy_sandbox sandbox)")
        if (self.artifact_id is None) == (self.artifact_from_step_id is None):
            raise ValueError("give exactly one source: artifact_id or artifact_from_step_id")
        if self.artifact_from_step_id and self.env_id:
            raise ValueError("artifact_from_step_id loads files into a sandbox: use agent_name or sandbox_name, "
                             "not env_id")
        if self.entity_ids is not None and self.env_id is None:
            raise ValueError("entity_ids scopes a dataset loaded into an env: use env_id")
        return self


async def run(step: LoadArtifactStep, ctx: RunContext) -> RunContext:
    """Load into an env through its data plane, or copy files into an agent's sandbox."""
    if step.env_id is not None:
        await load_into_env(step, ctx, step.env_id)
        return ctx
    await load_into_sandbox(step, ctx)
    return ctx


async def load_into_sandbox(step: LoadArtifactStep, ctx: RunContext) -> None:
    """Copy a file artifact or universe (or a collect step's universe) into an agent's or a bare sandbox."""
    run_ = current_run()
    sandbox, _, label = sandbox_target(ctx, step, agent_name=step.agent_name, sandbox_name=step.sandbox_name)
    artifact_id, version = _source(step, ctx)
    try:
        dest = sandbox.path(step.destination_path)
    except (AgentEnvError, ValueError) as exc:
        raise StepError(f"destination_path {step.destination_path!r}: {exc}", step=step) from None
    store = await artifact_store(run_)
    try:
        meta = await asyncio.to_thread(store.get_metadata, artifact_id, version)
        if meta.kind == "environment":
            raise StepError(f"artifact '{meta.id}@{meta.version}' is an environment artifact: load it into an env "
                            "with env_id", step=step)
        dest.mkdir(parents=True, exist_ok=True)
        written = await asyncio.to_thread(store.download, meta, dest)
    except StepError:
        raise
    except AgentEnvError as exc:
        raise as_step_error(exc, step, f"loading artifact '{artifact_id}' into {label}") from exc
    if step.artifact_id is not None:  # the task's own material (a collect step's universe is an agent's work)
        sandbox.note_task_files(written)
    ctx.metadata.loaded_file_artifact_universes.append(LoadedFiles(
        step_id=step.id, agent_name=step.agent_name, sandbox_name=step.sandbox_name, folder=step.destination_path,
        universe=ArtifactRef(id=meta.id, version=meta.version, kind=meta.kind),
        files=sorted(str(p.relative_to(dest)) for p in written),
    ))


def _source(step: LoadArtifactStep, ctx: RunContext) -> tuple[str, str]:
    """The artifact id and version to load: named directly, or the universe a collect step made."""
    if step.artifact_id is not None:
        return step.artifact_id, step.version or "latest"
    collected = ctx.metadata.collected_artifacts.get(step.artifact_from_step_id or "")
    if collected is None:
        raise StepError(f"step '{step.artifact_from_step_id}' has not collected anything visible to this step",
                        step=step)
    universe = collected.file_artifact_universe
    if not universe:
        raise StepError(f"step '{step.artifact_from_step_id}' collected no files, so there is nothing to load",
                        step=step)
    return universe.id, universe.version


async def load_into_env(step: LoadArtifactStep, ctx: RunContext, env_id: str) -> None:
    """data/reset, then data/add with the artifact's files, after checking it is meant for this env."""
    from prefect_agentenv.artifacts.datasets import DatasetError, read_dataset
    from prefect_agentenv.protocols.env import DataPart

    assert step.artifact_id is not None
    store = await artifact_store(current_run())
    client = env_client(ctx, env_id, step)
    try:
        meta = await asyncio.to_thread(store.get_metadata, step.artifact_id, step.version or "latest")
        _check_environment(step, meta, env_id, (await client.card()).name)
        if step.entity_ids is not None:
            dataset = await asyncio.to_thread(read_dataset, store, meta.id, meta.version)
            parts: list[Part] = [DataPart(data=dataset.scoped(step.entity_ids))]
        else:
            parts = [await _file_part(store, meta, f.name) for f in meta.files]
        if step.reset:
            await client.data_reset()
        await client.data_add(parts)
    except DatasetError as exc:
        raise StepError(f"artifact '{step.artifact_id}': {exc}", step=step) from None
    except AgentEnvError as exc:
        if isinstance(exc, StepError):
            raise
        raise as_step_error(exc, step, f"loading artifact '{step.artifact_id}' into env '{env_id}'") from exc


def _check_environment(step: LoadArtifactStep, meta: ArtifactMetadata, env_id: str, env_name: str) -> None:
    if meta.kind != "environment":
        raise StepError(
            f"artifact '{meta.id}@{meta.version}' is a {meta.kind} artifact; an env loads environment artifacts "
            f"(publish one with: prefect-agentenv artifact put {meta.id} FILE --environment {env_name})",
            step=step)
    if meta.environment_name not in (env_name, env_id):
        raise StepError(
            f"artifact '{meta.id}@{meta.version}' is for environment '{meta.environment_name}', "
            f"but env '{env_id}' is '{env_name}'", step=step)


async def _file_part(store: object, meta: ArtifactMetadata, name: str) -> FilePart:
    from prefect_agentenv.protocols.env import FilePart

    data = await asyncio.to_thread(store.read_file, meta, name)  # type: ignore[attr-defined]
    mime = mimetypes.guess_type(name)[0] or "application/octet-stream"
    return FilePart.from_bytes(data, name=name, mime_type=mime)


definition = StepDefinition(LoadArtifactStep, run)
