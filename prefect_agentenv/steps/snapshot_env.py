"""snapshot_env: export a deployed env's state (data/get) as a new environment artifact version."""

from __future__ import annotations

from typing import Literal

from prefect_agentenv.steps.base import EnvRef, StepModel
from prefect_agentenv.steps.registry import StepDefinition


class SnapshotEnvStep(StepModel):
    """Stores the env's exported state; the new version is recorded in metadata.env_snapshots."""

    type: Literal["snapshot_env"] = "snapshot_env"
    env_id: EnvRef
    """The deployed env to export."""
    artifact_id: str | None = None
    """Artifact to publish a version of; derived from the task, step and env when omitted."""


definition = StepDefinition(SnapshotEnvStep)
