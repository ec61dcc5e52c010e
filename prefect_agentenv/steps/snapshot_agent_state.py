"""snapshot_agent_state: keep an agent's conversation (and, if asked, its workspace) as a versioned universe."""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from prefect_agentenv.artifacts import ArtifactBackend
from prefect_agentenv.context import AgentSnapshot, RunContext
from prefect_agentenv.exceptions import AgentEnvError, NotInContextError, StepError
from prefect_agentenv.run_services.agents import deployed_agent, sandbox_of
from prefect_agentenv.run_services.clients import artifact_store, as_step_error, read_record
from prefect_agentenv.runtime.resources.run import RunResources, current_run
from prefect_agentenv.steps.base import DEFAULT_AGENT_NAME, AgentRef, PromptRef, SandboxPath, StepModel
from prefect_agentenv.steps.registry import StepDefinition


class SnapshotAgentStateStep(StepModel):
    """Publishes a new version of a universe holding the agent's state after a prompt.

    Members: ``conversation.json`` (every turn of the prompt, as prompt_agent kept it),
    ``trajectory.json`` (the agent's trajectory of that prompt, when it gave one) and, with
    ``workspace_path``, the files under that sandbox folder as ``workspace/<path>``. A later
    ``load_artifact`` can put them into another agent's sandbox. Recorded in metadata.agent_snapshots.
    """

    type: Literal["snapshot_agent_state"] = "snapshot_agent_state"
    artifact_id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    """Id of the universe to publish a version of."""
    prompt_id: PromptRef
    """The prompt whose conversation is kept."""
    agent_name: AgentRef = DEFAULT_AGENT_NAME
    """The agent (AgentEnv's default-agent when omitted)."""
    workspace_path: SandboxPath | None = None
    """Also keep the files under this sandbox folder (for example /app/artifact)."""

    produces_artifact_field = "artifact_id"
    accepted_but_ignored = ("env_id", "universe_artifact_id", "timeout_seconds")


async def run(step: SnapshotAgentStateStep, ctx: RunContext) -> RunContext:
    """Gather the records into a folder of the run, publish them as a universe, record its version."""
    run_ = current_run()
    agent = deployed_agent(ctx, step.agent_name, step)
    if step.prompt_id not in ctx.prompt_responses:
        raise NotInContextError(f"Prompt '{step.prompt_id}' not found in context.prompt_responses",
                                step=step)
    folder = run_.step_folder("snapshots", step.id)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    files = await _records(run_, step, ctx, folder)
    if step.workspace_path is not None:
        files.update(_workspace(run_, step, agent, folder))
    store = await artifact_store(run_)
    try:
        universe = await asyncio.to_thread(_publish, store, step.artifact_id, files)
    except AgentEnvError as exc:
        raise as_step_error(exc, step, f"publishing the snapshot of agent '{step.agent_name}'") from exc
    ctx.metadata.agent_snapshots.append(AgentSnapshot(
        **universe, source_agent_name=step.agent_name, source_prompt_id=step.prompt_id, capture_step_id=step.id,
        files=sorted(files)))
    return ctx


async def _records(run_: RunResources, step: SnapshotAgentStateStep, ctx: RunContext, folder: Path) -> dict[str, Path]:
    """The conversation turns and the trajectory prompt_agent stored, written into ``folder``."""
    store = await artifact_store(run_)
    found: dict[str, Path] = {}
    turns_key = f"{run_.run_id}/conversations/{step.prompt_id}.json"
    trajectory_url = ctx.prompt_responses[step.prompt_id].trajectory
    sources: list[tuple[str, Any]] = [("conversation.json", asyncio.to_thread(_get, store, turns_key))]
    if trajectory_url:
        sources.append(("trajectory.json", read_record(run_, trajectory_url)))
    for name, pending in sources:
        data = await pending
        if data is not None:
            (folder / name).write_bytes(data)
            found[name] = folder / name
    if not found:
        raise StepError(f"prompt '{step.prompt_id}' left no conversation record to snapshot", step=step)
    return found


def _get(store: ArtifactBackend, key: str) -> bytes | None:
    try:
        return store.get_object(key)
    except AgentEnvError:
        return None


def _workspace(run_: RunResources, step: SnapshotAgentStateStep, agent: Any, folder: Path) -> dict[str, Path]:
    """Copies of the files under workspace_path (copied, so a running agent cannot change them mid-publish)."""
    sandbox = sandbox_of(run_, agent)
    try:
        base = sandbox.path(step.workspace_path or "")
    except (AgentEnvError, ValueError) as exc:
        raise StepError(f"workspace_path {step.workspace_path!r}: {exc}", step=step) from None
    names = sandbox.list_files(step.workspace_path or "") if base.is_dir() else []
    found: dict[str, Path] = {}
    for rel in names:
        target = folder / "workspace" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(base / rel, target)
        found[f"workspace/{rel}"] = target
    return found


def _publish(store: ArtifactBackend, universe_id: str, files: dict[str, Path]) -> dict[str, str]:
    members = []
    for rel, path in sorted(files.items()):
        member = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{universe_id}--{rel}").strip("-.")[:200]
        members.append(store.publish_files(member, {rel: path}).ref)
    universe = store.publish_universe(universe_id, members)
    return {"id": universe.id, "version": universe.version}


definition = StepDefinition(SnapshotAgentStateStep, run)
