"""No secret of a saved block comes back through the Prefect API, `prefect block inspect` included,
and blocks saved under the older schema are upgraded in place."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import cast

from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import BlockDocumentCreate, BlockSchemaCreate
from prefect.settings import get_current_settings
from pydantic import SecretStr

from prefect_agentenv.blocks import A2AAgent, AgentEnvironment, ArtifactStore, ModelEndpoint
from prefect_agentenv.blocks.upgrade import upgrade_blocks

SECRETS = ("env-token-4e1f", "agent-key-77aa", "model-key-19cd", "aws-id-0b2e", "aws-secret-c3d4")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def save_one_block_of_each_type() -> dict[str, str]:
    names = {slug: unique("secret") for slug in ("agentenv-environment", "agentenv-a2a-agent",
                                                 "agentenv-model-endpoint", "agentenv-artifact-store")}
    await AgentEnvironment(command=["srv", "{port}"], secret_env={"CRM_TOKEN": SECRETS[0]}).asave(
        names["agentenv-environment"])
    await A2AAgent(command=["agent", "{port}"], secret_env={"API_KEY": SecretStr(SECRETS[1])}).asave(
        names["agentenv-a2a-agent"])
    await ModelEndpoint(base_url="https://models.example.com/v1", default_model="m",
                        api_key=SecretStr(SECRETS[2])).asave(names["agentenv-model-endpoint"])
    await ArtifactStore(kind="s3", bucket="b", aws_access_key_id=SecretStr(SECRETS[3]),
                        aws_secret_access_key=SecretStr(SECRETS[4])).asave(names["agentenv-artifact-store"])
    return names


async def test_blocks_read_through_the_api_without_include_secrets_show_no_secret(prefect_harness: None) -> None:
    names = await save_one_block_of_each_type()
    async with get_client() as client:
        response = await client._client.post("/block_documents/filter", json={"include_secrets": False})
        listed = response.json()
        ours = [d for d in listed if d["name"] in names.values()]
        assert len(ours) == 4
        for secret in SECRETS:
            assert secret not in response.text
        env_doc = next(d for d in ours if d["name"] == names["agentenv-environment"])
        assert env_doc["data"]["secret_env"] == {"CRM_TOKEN": "********"}
    loaded = cast(AgentEnvironment, await AgentEnvironment.aload(names["agentenv-environment"]))
    assert loaded.to_launch_spec().secret_values() == {"CRM_TOKEN": SECRETS[0]}

    env = {**os.environ, "PREFECT_API_URL": str(get_current_settings().api.url)}
    inspected = subprocess.run(
        [str(Path(sys.executable).parent / "prefect"), "block", "inspect",
         f"agentenv-environment/{names['agentenv-environment']}"], env=env, capture_output=True, text=True,
        timeout=120)
    assert inspected.returncode == 0, inspected.stderr
    assert "CRM_TOKEN" in inspected.stdout and SECRETS[0] not in inspected.stdout + inspected.stderr


async def test_a_block_saved_under_the_older_schema_loads_and_is_masked_after_upgrade(
        prefect_harness: None) -> None:
    """Blocks saved before ``secret_env`` was a SecretDict listed it as one secret field, which the API
    did not mask: they still load, and ``upgrade_blocks`` re-saves them under the current schema."""
    await AgentEnvironment.aregister_type_and_schema()
    name = unique("legacy")
    old_fields = AgentEnvironment.model_json_schema()
    old_fields["secret_fields"] = ["secret_env"]
    old_fields["properties"]["secret_env"] = {"type": "object", "additionalProperties": {
        "type": "string", "format": "password", "writeOnly": True}, "title": "Secret Env"}
    async with get_client() as client:
        block_type = await client.read_block_type_by_slug("agentenv-environment")
        schema = await client.create_block_schema(BlockSchemaCreate(
            fields=old_fields, block_type_id=block_type.id, capabilities=[], version="legacy"))
        await client.create_block_document(BlockDocumentCreate(
            name=name, block_schema_id=schema.id, block_type_id=block_type.id,
            data={"command": ["srv", "{port}"], "secret_env": {"CRM_TOKEN": "legacy-clear-9f"}}))
        before = await client.read_block_document_by_name(name, "agentenv-environment", include_secrets=False)
        assert json.dumps(before.data).count("legacy-clear-9f") == 1  # the reason for the upgrade

        loaded = cast(AgentEnvironment, await AgentEnvironment.aload(name))
        assert loaded.to_launch_spec().secret_values() == {"CRM_TOKEN": "legacy-clear-9f"}

        upgraded = await upgrade_blocks((AgentEnvironment,))
        assert f"agentenv-environment/{name}" in upgraded
        after = await client.read_block_document_by_name(name, "agentenv-environment", include_secrets=False)
        assert after.data["secret_env"] == {"CRM_TOKEN": "********"}
    reloaded = cast(AgentEnvironment, await AgentEnvironment.aload(name))
    assert reloaded.to_launch_spec().secret_values() == {"CRM_TOKEN": "legacy-clear-9f"}
    assert f"agentenv-environment/{name}" not in await upgrade_blocks((AgentEnvironment,))
