"""collect_artifacts: copy files out of an agent's sandbox into the artifact store."""

from __future__ import annotations

from typing import Literal

from prefect_agentenv.steps.base import AgentRef, NameKind, StepModel
from prefect_agentenv.steps.registry import StepDefinition


class CollectArtifactsStep(StepModel):
    """Collects files from an agent's sandbox as file artifacts grouped in one universe."""

    type: Literal["collect_artifacts"] = "collect_artifacts"
    agent_name: AgentRef
    """The deployed agent whose sandbox is read."""
    base_path: str = "/app/artifact"
    """Folder in the sandbox to collect from."""
    artifact_paths: list[str] | None = None
    """Files relative to base_path; every file under it when omitted."""
    artifact_id: str | None = None
    """Id of the universe to publish; derived from the task and step ids when omitted."""

    accepted_but_ignored = ("env_id", "sandbox_name", "container_name")

    def provided(self) -> list[tuple[NameKind, str, tuple[str | int, ...]]]:
        """A collect step is named by its own id (artifact_from_step_id refers to it)."""
        return [*super().provided(), ("collect", self.id, ("id",))]


definition = StepDefinition(CollectArtifactsStep)
