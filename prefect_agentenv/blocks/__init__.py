"""Prefect blocks of prefect-agentenv: configuration saved in Prefect and loaded by name."""

from prefect_agentenv.blocks.agent import A2AAgent
from prefect_agentenv.blocks.artifact_store import ArtifactStore
from prefect_agentenv.blocks.environment import AgentEnvironment
from prefect_agentenv.blocks.model_endpoint import ModelEndpoint

__all__ = ["A2AAgent", "AgentEnvironment", "ArtifactStore", "ModelEndpoint"]
