"""Prefect blocks of prefect-agentenv: configuration saved in Prefect and loaded by name."""

from prefect_agentenv.blocks.artifact_store import ArtifactStore
from prefect_agentenv.blocks.environment import AgentEnvironment

__all__ = ["AgentEnvironment", "ArtifactStore"]
