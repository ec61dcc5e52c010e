"""Prefect blocks of prefect-agentenv: configuration saved in Prefect and loaded by name.

The block classes are imported on first use (PEP 562): a run that loads an env or agent block
must not pay for ``ArtifactStore``, whose S3 support imports prefect-aws, boto3 and docker
(about 0.5 s of CPU). ``prefect_agentenv.blocks.collection`` imports every block, for Prefect's
``prefect.collections`` entry point (block registration and loading by slug).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prefect_agentenv.lazy import lazy_names

if TYPE_CHECKING:
    from prefect_agentenv.blocks.agent import A2AAgent
    from prefect_agentenv.blocks.artifact_store import ArtifactStore
    from prefect_agentenv.blocks.environment import AgentEnvironment
    from prefect_agentenv.blocks.model_endpoint import ModelEndpoint

_MODULES = {
    "A2AAgent": "prefect_agentenv.blocks.agent",
    "AgentEnvironment": "prefect_agentenv.blocks.environment",
    "ArtifactStore": "prefect_agentenv.blocks.artifact_store",
    "ModelEndpoint": "prefect_agentenv.blocks.model_endpoint",
}

__all__ = ["A2AAgent", "AgentEnvironment", "ArtifactStore", "ModelEndpoint"]


__getattr__ = lazy_names(__name__, _MODULES, globals())
