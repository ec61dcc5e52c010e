"""The ModelEndpoint block, and how a role resolves to a block, the settings or the mock model."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from typing import cast

import pytest
from pydantic import SecretStr, ValidationError

from prefect_agentenv.blocks.model_endpoint import ModelEndpoint
from prefect_agentenv.exceptions import ConfigurationError, ProtocolError
from prefect_agentenv.protocols.openai import ChatMessage, OpenAIClient
from prefect_agentenv.resolution.models import MOCK_MODEL, resolve_model_endpoint
from prefect_agentenv.settings import get_settings
from servers import free_port

SECRET = "sk-model-endpoint-test-0123456789"
OPENAI_VARIABLES = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "PREFECT_AGENTENV_OPENAI_BASE_URL",
                    "PREFECT_AGENTENV_OPENAI_API_KEY")


def unique(prefix: str) -> str:
    """A block name no other test of the session uses (they share one Prefect API)."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def no_openai_settings(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """Settings without any OpenAI endpoint, whatever the machine's environment holds."""
    for name in OPENAI_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    get_settings.cache_clear()
    yield monkeypatch
    get_settings.cache_clear()


def test_the_block_has_a_stable_slug() -> None:
    assert ModelEndpoint.get_block_type_slug() == "agentenv-model-endpoint"


def test_the_docstring_shows_loading_the_default_endpoint() -> None:
    assert 'ModelEndpoint.load("default")' in (ModelEndpoint.__doc__ or "")


def test_a_role_without_its_own_model_uses_the_default_model() -> None:
    block = ModelEndpoint(base_url="https://llm.example.com/v1", default_model="base", roles={"judge": "strict"})

    assert (block.model_for("judge"), block.model_for("agent"), block.model_for("user")) == ("strict", "base", "base")


def test_a_block_needs_a_base_url_and_a_default_model() -> None:
    with pytest.raises(ValidationError):
        ModelEndpoint(base_url="", default_model="m")
    with pytest.raises(ValidationError):
        ModelEndpoint(base_url="https://llm.example.com/v1")  # type: ignore[call-arg]


def test_the_api_key_never_shows_in_repr_str_or_json() -> None:
    block = ModelEndpoint(base_url="https://llm.example.com/v1", api_key=SecretStr(SECRET), default_model="m")

    assert SECRET not in repr(block)
    assert SECRET not in str(block)
    assert SECRET not in block.model_dump_json()
    assert block.api_key is not None and block.api_key.get_secret_value() == SECRET


async def test_a_saved_block_loads_back_with_its_key_and_roles(prefect_harness: None) -> None:
    name = unique("models")
    await ModelEndpoint(base_url="https://llm.example.com/v1", api_key=SecretStr(SECRET), default_model="base",
                        roles={"judge": "strict"}, request_timeout_seconds=30).asave(name)

    loaded = cast(ModelEndpoint, await ModelEndpoint.aload(name))

    assert (loaded.base_url, loaded.default_model, loaded.roles) == ("https://llm.example.com/v1", "base",
                                                                     {"judge": "strict"})
    assert loaded.request_timeout_seconds == 30
    assert loaded.api_key is not None and loaded.api_key.get_secret_value() == SECRET
    assert SECRET not in repr(loaded)


async def test_a_block_wins_and_maps_each_role_to_its_model(prefect_harness: None,
                                                             no_openai_settings: pytest.MonkeyPatch) -> None:
    name = unique("models")
    no_openai_settings.setenv("PREFECT_AGENTENV_OPENAI_BASE_URL", "https://settings.example.com/v1")
    get_settings.cache_clear()
    await ModelEndpoint(base_url="https://llm.example.com/v1", api_key=SecretStr(SECRET), default_model="base",
                        roles={"judge": "strict"}, request_timeout_seconds=45).asave(name)

    judge = await resolve_model_endpoint("judge", block_name=name)
    agent = await resolve_model_endpoint("agent", block_name=name)
    chosen = await resolve_model_endpoint("judge", block_name=name, model="from-the-task")

    assert (judge.source, judge.base_url, judge.model, judge.is_mock) == ("block", "https://llm.example.com/v1",
                                                                          "strict", False)
    assert judge.request_timeout_seconds == 45
    assert agent.model == "base"
    assert chosen.model == "from-the-task"
    assert SECRET not in repr(judge) and SECRET not in judge.model_dump_json()


async def test_without_the_named_block_the_settings_endpoint_is_used(prefect_harness: None,
                                                                      no_openai_settings: pytest.MonkeyPatch) -> None:
    no_openai_settings.setenv("PREFECT_AGENTENV_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    no_openai_settings.setenv("PREFECT_AGENTENV_OPENAI_API_KEY", SECRET)
    get_settings.cache_clear()

    resolved = await resolve_model_endpoint("agent", block_name=unique("absent"), model="served-model")

    assert (resolved.source, resolved.base_url, resolved.model, resolved.is_mock) == (
        "settings", "http://127.0.0.1:9/v1", "served-model", False)
    assert resolved.api_key is not None and resolved.api_key.get_secret_value() == SECRET


async def test_the_conventional_openai_variables_configure_the_endpoint(
        no_openai_settings: pytest.MonkeyPatch) -> None:
    no_openai_settings.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    get_settings.cache_clear()

    resolved = await resolve_model_endpoint("agent", use_blocks=False)

    assert (resolved.source, resolved.base_url) == ("settings", "http://127.0.0.1:9/v1")


async def test_with_nothing_configured_the_mock_model_answers_and_says_so(
        no_openai_settings: pytest.MonkeyPatch) -> None:
    resolved = await resolve_model_endpoint("judge", use_blocks=False, model="ignored")
    running = await resolve_model_endpoint("agent", use_blocks=False, mock_base_url="http://127.0.0.1:8400/v1")

    assert (resolved.source, resolved.is_mock, resolved.model, resolved.base_url) == ("mock", True, MOCK_MODEL, None)
    assert running.base_url == "http://127.0.0.1:8400/v1"
    with pytest.raises(ConfigurationError, match="mock model, which is not serving yet"):
        resolved.client()
    async with running.client() as client:
        assert client.base_url == "http://127.0.0.1:8400/v1"


async def test_a_block_name_prefect_cannot_store_is_a_configuration_error(prefect_harness: None) -> None:
    with pytest.raises(ConfigurationError, match="cannot name a ModelEndpoint block"):
        await resolve_model_endpoint("agent", block_name="Not A Name", use_blocks=True)


async def test_the_api_key_never_reaches_logs_or_errors_while_resolving_and_calling(
        prefect_harness: None, no_openai_settings: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    closed_port = free_port()
    name = unique("models")
    await ModelEndpoint(base_url=f"http://127.0.0.1:{closed_port}/v1", api_key=SecretStr(SECRET),
                        default_model="m").asave(name)
    caplog.set_level(logging.DEBUG)

    resolved = await resolve_model_endpoint("agent", block_name=name)
    assert resolved.base_url is not None
    async with OpenAIClient(resolved.base_url, api_key=resolved.api_key, timeout=2.0, max_retries=1) as client:
        with pytest.raises(ProtocolError) as caught:
            await client.chat([ChatMessage.user("hello")], model=resolved.model)

    assert "retrying" in caplog.text
    assert SECRET not in caplog.text
    assert SECRET not in str(caught.value) and SECRET not in repr(caught.value)
