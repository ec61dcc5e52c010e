"""Every model call of a run goes through the run's model gateway: agents and judges hold a token of
the gateway's, never the provider's key, and the report counts what the gateway relayed."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from servers import mock_model

from prefect_agentenv.gateway.tokens import TOKEN_PREFIX
from prefect_agentenv.settings import get_settings

from .helpers import EXAMPLES, run_doc

pytestmark = pytest.mark.usefixtures("published")

CANARY = "sk-canary-provider-key-5f0e9d8c7b6a"
PLAN = json.loads((EXAMPLES / "plans" / "reply-to-dana.json").read_text())["plan"]
TONE = [{"id": "polite", "criterion": "The email to Dana is polite and signed.", "weight": 1}]


@pytest.fixture(scope="module")
def model_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with mock_model(tmp_path_factory.mktemp("gateway-model") / "mock-model.log") as server:
        yield server.base_url


@pytest.fixture
def provider(model_server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A 'provider' at OPENAI_BASE_URL with a real-looking key: the one thing no agent may hold."""
    httpx.post(f"{model_server}/mock/reset", timeout=5).raise_for_status()
    monkeypatch.setenv("OPENAI_BASE_URL", f"{model_server}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    get_settings.cache_clear()
    yield model_server
    get_settings.cache_clear()


def seen(server: str) -> list[dict[str, Any]]:
    return httpx.get(f"{server}/mock/requests", timeout=5).json()["requests"]


def environments_holding(needle: bytes) -> list[int]:
    """Live processes (other than this one) whose environment holds ``needle``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if needle in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


async def test_an_agent_and_its_judge_reach_the_model_only_through_the_gateway_which_counts_every_call(
        provider: str) -> None:
    steps = [
        {"id": "assistant", "type": "deploy_agent", "a2a_agent_id": "llm", "agent_name": "assistant"},
        {"id": "reply", "type": "prompt_agent", "agent_name": "assistant", "prompt_id": "reply",
         "prompt": "Say hello to Dana.", "depends_on": ["assistant"]},
        {"id": "hold", "type": "test_sleep", "seconds": 2.0, "depends_on": ["reply"]},
        {"id": "tone", "type": "rubrics_verifier", "prompt_id": "reply", "verifier_id": "tone", "criteria": TONE,
         "judge_mode": "model", "depends_on": ["reply"]},
    ]
    run = asyncio.ensure_future(run_doc(steps))
    holders: list[int] = []
    leaked: list[int] = []
    while not run.done():  # while the agent runs: who holds a gateway token, who holds the key
        holders = holders or environments_holding(TOKEN_PREFIX.encode())
        leaked += environments_holding(CANARY.encode())
        await asyncio.sleep(0.2)
    report = await run
    assert report.status == "completed", report.error
    assert holders, "the agent process was started with a gateway token"
    assert leaked == [], "no process the run started holds the provider's key"

    calls = report.model_calls
    assert calls is not None
    roles = {call.role for call in calls.calls}
    assert roles == {"agent", "judge"}
    assert calls.totals.calls == len(calls.calls) == len(seen(provider))
    assert calls.totals.input_tokens > 0 and calls.totals.output_tokens > 0
    assert calls.by_role["judge"].calls >= 1 and calls.by_role["agent"].calls >= 1
    assert all(call.status == 200 and call.model == "mock" for call in calls.calls)
    # The provider got its key on every call (the mock says whether a key came), nobody else did.
    assert all(request["has_authorization"] for request in seen(provider))
    written = report.model_dump_json()
    assert CANARY not in written and TOKEN_PREFIX not in written
    assert any(t.kind == "gateway" and t.ok for t in report.teardown)


async def test_a_run_that_calls_no_model_starts_no_gateway(provider: str) -> None:
    report = await run_doc([{"id": "hold", "type": "test_sleep", "seconds": 0.1}])
    assert report.status == "completed" and report.model_calls is None
    assert not any(t.kind == "gateway" for t in report.teardown)
