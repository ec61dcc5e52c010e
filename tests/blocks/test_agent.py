"""The A2AAgent block: configuration that round-trips through the Prefect API."""

from __future__ import annotations

import uuid

import pytest
from pydantic import SecretStr, ValidationError

from prefect_agentenv.blocks import A2AAgent
from prefect_agentenv.blocks.agent import A2A_CARD_PATH


def unique(prefix: str) -> str:
    """A block name no other test of the session uses (they share one Prefect API)."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_the_block_has_a_stable_slug() -> None:
    assert A2AAgent.get_block_type_slug() == "agentenv-a2a-agent"


def test_the_docstring_shows_how_to_load_a_registered_agent() -> None:
    assert 'A2AAgent.load("claude-code")' in (A2AAgent.__doc__ or "")


def test_a_block_needs_exactly_one_of_command_image_or_url() -> None:
    with pytest.raises(ValidationError, match="give one of command"):
        A2AAgent()
    with pytest.raises(ValidationError, match="not both"):
        A2AAgent(command=["agent", "{port}"], url="http://127.0.0.1:9")


def test_an_agent_is_ready_when_its_a2a_card_answers() -> None:
    spec = A2AAgent(command=["agent", "--port", "{port}"]).to_launch_spec()
    assert spec.ready_path == A2A_CARD_PATH == "/.well-known/agent-card.json"
    assert spec.startup_timeout_seconds == 60
    assert A2AAgent(url="https://a.example.com", card_path="/card.json").to_launch_spec().ready_path == "/card.json"


def test_the_launch_spec_carries_every_setting_of_the_block() -> None:
    block = A2AAgent(version="2.1.0", command=["agent", "--port", "{port}"], env={"A": "1"},
                     secret_env={"KEY": SecretStr("k")}, startup_timeout_seconds=5)
    spec = block.to_launch_spec()
    assert spec.kind == "process"
    assert spec.command == ["agent", "--port", "{port}"]
    assert spec.env == {"A": "1"} and spec.secret_values() == {"KEY": "k"}
    assert spec.startup_timeout_seconds == 5
    docker = A2AAgent(image="agents/claude:1", container_port=9000).to_launch_spec()
    assert docker.kind == "docker" and docker.container_port == 9000
    assert A2AAgent(url="https://agent.example.com").to_launch_spec().kind == "url"


async def test_a_saved_block_loads_back_with_its_secrets(prefect_harness: None) -> None:
    name = unique("claude")
    await A2AAgent(version="1.2.3", command=["agent", "--port", "{port}"],
                   secret_env={"API_KEY": SecretStr("s3cret")}, description="A coding agent.").asave(name)
    loaded = await A2AAgent.aload(name)
    assert loaded.version == "1.2.3"
    assert loaded.command == ["agent", "--port", "{port}"]
    assert loaded.to_launch_spec().secret_values() == {"API_KEY": "s3cret"}
    assert loaded.card_path == A2A_CARD_PATH
    assert "s3cret" not in repr(loaded)
