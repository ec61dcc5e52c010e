"""Re-save blocks stored under an older schema of their type, so Prefect masks what is now secret.

Prefect masks a block's secrets according to the schema the block was saved with. Env and agent
blocks saved before ``secret_env`` became a ``SecretDict`` still load (their data is a plain
mapping, which the field accepts) but the API shows their values; saving them again under the
current schema fixes that without re-entering a secret.
"""

from __future__ import annotations

from prefect.blocks.core import Block
from prefect.client.orchestration import get_client
from prefect.exceptions import ObjectNotFound

from prefect_agentenv.blocks.agent import A2AAgent
from prefect_agentenv.blocks.artifact_store import ArtifactStore
from prefect_agentenv.blocks.environment import AgentEnvironment
from prefect_agentenv.blocks.model_endpoint import ModelEndpoint

BLOCK_TYPES: tuple[type[Block], ...] = (AgentEnvironment, A2AAgent, ArtifactStore, ModelEndpoint)


async def upgrade_blocks(block_types: tuple[type[Block], ...] = BLOCK_TYPES) -> list[str]:
    """Re-save every named block of ``block_types`` whose stored schema is not the current one.

    Returns:
        ``<block type slug>/<name>`` of each block saved again.
    """
    upgraded: list[str] = []
    async with get_client() as client:
        for block_type in block_types:
            slug = block_type.get_block_type_slug()
            checksum = block_type._calculate_schema_checksum()
            try:
                documents = await client.read_block_documents_by_type(slug, include_secrets=True)
            except ObjectNotFound:
                continue  # the type is registered by its first save: nothing stored yet
            for document in documents:
                if document.is_anonymous or not document.name or document.block_schema is None:
                    continue
                if document.block_schema.checksum == checksum:
                    continue
                block = block_type.model_validate(document.data)
                await block.asave(document.name, overwrite=True)
                upgraded.append(f"{slug}/{document.name}")
    return upgraded
