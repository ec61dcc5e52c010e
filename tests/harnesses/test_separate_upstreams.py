"""Codex and Claude Code each reach their own provider's API through the run's model gateway: the
Responses API and Anthropic's Messages API at separate upstreams, no LiteLLM in between, and a
harness whose API no upstream answers is refused at deploy with the fix."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harnesses.conftest import assert_smoke_passed, ensure_installed, run_document, smoke_task
from prefect_agentenv.settings import get_settings
from servers import Server, mock_model, running

pytestmark = pytest.mark.slow

ANTHROPIC_KEY = "sk-ant-canary-7d6c5b4a39281706"


@pytest.fixture(scope="module")
def providers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Server]]:
    """Three 'providers': chat completions, the Responses API and the Messages API, each its own server."""
    logs = tmp_path_factory.mktemp("providers")
    with running({name: mock_model(logs / f"{name}.log") for name in ("chat", "responses", "messages")}) as started:
        yield started


@pytest.fixture
def separate(providers: dict[str, Server], harness_home: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Server]:
    for server in providers.values():
        httpx.post(f"{server.base_url}/mock/reset", timeout=5).raise_for_status()
    monkeypatch.setenv("OPENAI_BASE_URL", providers["chat"].url("/v1"))
    monkeypatch.setenv("PREFECT_AGENTENV_RESPONSES_BASE_URL", providers["responses"].url("/v1"))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", providers["messages"].url("/v1"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    get_settings.cache_clear()
    return providers


def apis_seen(server: Server) -> set[str]:
    return {r["api"] for r in httpx.get(f"{server.base_url}/mock/requests", timeout=5).json()["requests"]}


@pytest.mark.parametrize(("harness", "wire"), [("codex", "responses"), ("claude-code", "messages")])
async def test_a_harness_reaches_its_own_providers_api_through_the_gateway(
        separate: dict[str, Server], harness: str, wire: str) -> None:
    await ensure_installed(harness)

    report, run_id = await run_document(smoke_task(harness))

    # Configured providers, not the run's own mock model: the model is the endpoint's default name.
    assert_smoke_passed(report, run_id, harness, model="gpt-4.1-mini")
    assert report.model_calls is not None
    assert {call.wire for call in report.model_calls.calls} == {wire}
    assert apis_seen(separate[wire]) and not apis_seen(separate["chat"])
    other = "messages" if wire == "responses" else "responses"
    assert not apis_seen(separate[other])
    assert ANTHROPIC_KEY not in report.model_dump_json()
