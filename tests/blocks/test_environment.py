"""The AgentEnvironment block: configuration that round-trips through the Prefect API."""

from __future__ import annotations

import uuid
from typing import cast

import pytest
from pydantic import SecretStr, ValidationError

from prefect_agentenv.blocks import AgentEnvironment
from prefect_agentenv.resolution.servers import resolve_env


def unique(prefix: str) -> str:
    """A block name no other test of the session uses (they share one Prefect API)."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_the_block_has_a_stable_slug() -> None:
    assert AgentEnvironment.get_block_type_slug() == "agentenv-environment"


def test_a_block_needs_exactly_one_of_command_image_or_url() -> None:
    with pytest.raises(ValidationError, match="give one of command"):
        AgentEnvironment()
    with pytest.raises(ValidationError, match="not both"):
        AgentEnvironment(command=["srv", "{port}"], url="http://127.0.0.1:9")


def test_the_launch_spec_carries_every_setting_of_the_block() -> None:
    block = AgentEnvironment(version="2.1.0", command=["srv", "--port", "{port}"], env={"A": "1"},
                             secret_env={"KEY": SecretStr("k")}, startup_timeout_seconds=5, mcp_path="/tools")
    spec = block.to_launch_spec()
    assert spec.kind == "process"
    assert spec.command == ["srv", "--port", "{port}"]
    assert spec.env == {"A": "1"} and spec.secret_values() == {"KEY": "k"}
    assert spec.startup_timeout_seconds == 5 and spec.mcp_path == "/tools"
    assert AgentEnvironment(image="envs/email:1", container_port=9000).to_launch_spec().kind == "docker"
    assert AgentEnvironment(url="https://env.example.com").to_launch_spec().kind == "url"


async def test_a_saved_block_loads_back_with_its_secrets(prefect_harness: None) -> None:
    name = unique("mail")
    await AgentEnvironment(version="1.2.3", command=["srv", "--port", "{port}"],
                           secret_env={"API_KEY": SecretStr("s3cret")}, description="A mailbox.").asave(name)
    loaded = cast(AgentEnvironment, await AgentEnvironment.aload(name))
    assert loaded.version == "1.2.3"
    assert loaded.command == ["srv", "--port", "{port}"]
    assert loaded.to_launch_spec().secret_values() == {"API_KEY": "s3cret"}
    assert "s3cret" not in repr(loaded)


async def test_a_block_named_like_the_env_id_wins_over_the_reference_env(prefect_harness: None) -> None:
    name = unique("env")
    await AgentEnvironment(version="9.9.9", url="https://env.example.com").asave(name)
    resolved = await resolve_env(name)
    assert resolved.source == "block"
    assert resolved.version == "9.9.9"
    assert resolved.spec.url == "https://env.example.com"
