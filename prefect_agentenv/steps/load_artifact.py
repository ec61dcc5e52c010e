"""load_artifact: load a stored artifact into an env (data plane) or an agent's sandbox (files)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from prefect_agentenv.steps.base import AgentRef, CollectRef, EnvRef, StepModel
from prefect_agentenv.steps.registry import StepDefinition


class LoadArtifactStep(StepModel):
    """Loads an environment artifact into an env, or file artifacts into an agent's sandbox."""

    type: Literal["load_artifact"] = "load_artifact"
    artifact_id: str | None = None
    """Id of the stored artifact (environment artifact, file artifact or universe)."""
    env_id: EnvRef | None = None
    """Load into this deployed env: data/reset, then data/add with the artifact."""
    agent_name: AgentRef | None = None
    """Copy files into this deployed agent's sandbox."""
    artifact_from_step_id: CollectRef | None = None
    """Load the universe a collect_artifacts step made (instead of artifact_id)."""
    collected_artifacts_step_id: CollectRef | None = None
    """Older name of artifact_from_step_id."""
    destination_path: str = "/tmp/file_artifacts"
    """Folder in the agent's sandbox the files are copied to."""

    accepted_but_ignored = ("env_step_id", "sandbox_name", "container_name", "snapshot_after_load")

    @model_validator(mode="after")
    def _one_source_one_target(self) -> LoadArtifactStep:
        if self.collected_artifacts_step_id and self.artifact_from_step_id:
            raise ValueError("give artifact_from_step_id or its older name collected_artifacts_step_id, not both")
        if self.collected_artifacts_step_id:
            # Normalise to the current name so the document round-trips through JSON.
            self.artifact_from_step_id, self.collected_artifacts_step_id = self.collected_artifacts_step_id, None
        if (self.env_id is None) == (self.agent_name is None):
            raise ValueError("give exactly one target: env_id (an env) or agent_name (an agent's sandbox)")
        if (self.artifact_id is None) == (self.artifact_from_step_id is None):
            raise ValueError("give exactly one source: artifact_id or artifact_from_step_id")
        if self.artifact_from_step_id and self.env_id:
            raise ValueError("artifact_from_step_id loads files into an agent: use agent_name, not env_id")
        return self


definition = StepDefinition(LoadArtifactStep)
