"""snapshot_env: export a deployed env's state (data/get) as a new environment artifact version."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Literal

from prefect_agentenv.context import ArtifactRef, EnvSnapshot, RunContext
from prefect_agentenv.exceptions import AgentEnvError
from prefect_agentenv.run_services.clients import artifact_store, as_step_error, env_client
from prefect_agentenv.runtime.resources.run import current_run
from prefect_agentenv.steps.base import EnvRef, StepModel
from prefect_agentenv.steps.registry import StepDefinition


class SnapshotEnvStep(StepModel):
    """Stores the env's exported state; the new version is recorded in metadata.env_snapshots."""

    type: Literal["snapshot_env"] = "snapshot_env"
    env_id: EnvRef
    """The deployed env to export."""
    artifact_id: str | None = None
    """Artifact to publish a version of; ``<task id>-<env id>-snapshot`` when omitted."""

    produces_artifact_field = "artifact_id"
    accepted_but_ignored = ("env_instance_id", "env_step_id", "gateway_url", "original_universe_artifact_id",
                            "export_timeout_seconds", "include_env_trajectory", "include_env_changes")
    reference_aliases = {"snapshot_id": "artifact_id"}


async def run(step: SnapshotEnvStep, ctx: RunContext) -> RunContext:
    """data/get, then publish the exported state so a later load_artifact restores it."""
    run_ = current_run()
    client = env_client(ctx, step.env_id, step)
    artifact_id = step.artifact_id or _safe_id(f"{run_.task_id}-{step.env_id}-snapshot")
    try:
        card = await client.card()
        state = await client.export_state()
        store = await artifact_store(run_)
        data = json.dumps(state, indent=2, sort_keys=True, default=str).encode()
        meta = await asyncio.to_thread(store.publish_environment, artifact_id, card.name, "state.json", data)
        url = await asyncio.to_thread(store.file_url, meta)
    except AgentEnvError as exc:
        raise as_step_error(exc, step, f"snapshotting env '{step.env_id}'") from exc
    ctx.metadata.env_snapshots[step.id] = EnvSnapshot(env_id=step.env_id, artifact=ArtifactRef(id=meta.id, version=meta.version),
                                                      url=url, sha256=meta.files[0].sha256)
    return ctx


def _safe_id(value: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", value).strip("-.") or "snapshot"


definition = StepDefinition(SnapshotEnvStep, run)
