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

from prefect_agentenv.gateway.tokens import TOKEN_PREFIX
from prefect_agentenv.settings import get_settings
from servers import mock_model

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
    # The transcript lists every call, and its page shows them.
    from prefect_agentenv.viewer.transcript_html import transcript_html

    assert report.transcript is not None
    assert [(c.role, c.input_tokens) for c in report.transcript.model_calls] == [
        (c.role, c.input_tokens) for c in calls.calls]
    page = transcript_html(report.transcript, lambda url: url)
    assert "<h2>Model calls</h2>" in page
    assert page.split("<table class=\"calls\">")[1].count("<tr><td>") == len(calls.calls)


async def test_a_run_that_calls_no_model_starts_no_gateway(provider: str) -> None:
    report = await run_doc([{"id": "hold", "type": "test_sleep", "seconds": 0.1}])
    assert report.status == "completed" and report.model_calls is None
    assert not any(t.kind == "gateway" for t in report.teardown)


async def test_a_task_run_limit_refuses_the_next_call_and_ends_the_prompt_truncated_not_failed(
        provider: str) -> None:
    steps = [
        {"id": "assistant", "type": "deploy_agent", "a2a_agent_id": "llm", "agent_name": "assistant"},
        {"id": "first", "type": "prompt_agent", "agent_name": "assistant", "prompt_id": "first",
         "prompt": "Say hello.", "depends_on": ["assistant"]},
        {"id": "second", "type": "prompt_agent", "agent_name": "assistant", "prompt_id": "second",
         "prompt": "Say goodbye.", "depends_on": ["first"]},
        {"id": "tone", "type": "rubrics_verifier", "prompt_id": "second", "verifier_id": "tone", "criteria": TONE,
         "judge_mode": "model", "depends_on": ["second"]},
    ]
    from prefect_agentenv.documents import validate_data
    from prefect_agentenv.flows.agent_task import run_task_document

    result = validate_data({"id": "limited", "limits": {"model_calls": 1}, "steps": steps})
    assert result.ok and result.document is not None, [p.render() for p in result.problems]
    report = await run_task_document(result.document, execute_in_prefect=False, publish=False)

    assert report.status == "completed", report.error  # a limit is not the agent's failure
    first, second = (report.context.prompt_responses[p] for p in ("first", "second"))
    assert not first.is_truncated and first.limit is None and first.response
    assert second.is_truncated and second.limit == "model_calls" and second.error is None
    calls = report.model_calls
    assert calls is not None
    agent = calls.by_role["agent"]
    assert (agent.calls, agent.refused, agent.limit_reached) == (2, 1, "model_calls")
    # The limit is the agent's: its judge still had a model.
    assert calls.by_role["judge"].calls >= 1 and calls.by_role["judge"].refused == 0


async def test_a_limit_given_as_an_override_wins_and_a_bad_one_is_refused_before_anything_starts(
        provider: str) -> None:
    from prefect_agentenv.exceptions import ConfigurationError
    from prefect_agentenv.runtime.resources.overrides import RunOverrides

    assert RunOverrides.parse({"limit_tokens": "500", "limit_seconds": "2.5"}).limits() == {
        "tokens": 500, "seconds": 2.5}
    with pytest.raises(ConfigurationError, match="limit_tokens"):
        RunOverrides.parse({"limit_tokens": "lots"})


def test_a_harness_whose_api_no_upstream_answers_is_refused_at_deploy_in_one_line_with_the_fix() -> None:
    from pydantic import SecretStr

    from prefect_agentenv.exceptions import DeployError
    from prefect_agentenv.resolution.models import ResolvedModel, _upstreams
    from prefect_agentenv.run_services.agents import _check_wire
    from prefect_agentenv.steps.deploy_agent import DeployAgentStep

    # OpenAI itself: chat completions and the Responses API, no Messages API.
    upstreams = _upstreams("https://api.openai.com/v1", SecretStr(CANARY), ["chat", "responses"],
                           responses=(None, None), messages=(None, None))
    endpoint = ResolvedModel(role="agent", base_url="http://127.0.0.1:1/v1", model="gpt-4.1", source="block",
                             upstreams=upstreams)
    step = DeployAgentStep(id="deploy", a2a_agent_id="claude-code")
    for harness in ("opencode", "codex", "pi"):
        _check_wire(harness, endpoint, step)  # their APIs have an upstream
    for harness, needs in (("claude-code", "messages_base_url"), ("gemini", "does not relay")):
        with pytest.raises(DeployError) as refused:
            _check_wire(harness, endpoint, step)
        assert needs in str(refused.value) and len(str(refused.value).splitlines()) == 1
        assert refused.value.step_id == "deploy" and CANARY not in str(refused.value)
