"""Every block of the package, imported for Prefect's ``prefect.collections`` entry point: Prefect
loads it before it looks a block class up by slug (``Block.load("agentenv-artifact-store/NAME")``)
and when it registers a collection's block types."""

from prefect_agentenv.blocks.agent import A2AAgent
from prefect_agentenv.blocks.artifact_store import ArtifactStore
from prefect_agentenv.blocks.environment import AgentEnvironment
from prefect_agentenv.blocks.model_endpoint import ModelEndpoint

__all__ = ["A2AAgent", "AgentEnvironment", "ArtifactStore", "ModelEndpoint"]
