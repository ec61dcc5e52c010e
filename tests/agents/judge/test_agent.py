"""The judge reference agent as a real process, grading with the mock model and opening sandbox files."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from prefect_agentenv.grading.judge import JudgeCriterion, build_judge_prompt, parse_judge_output
from prefect_agentenv.grading.judging import AgentAsk, judge_messages_as_text, run_judge
from prefect_agentenv.protocols.a2a import A2AClient
from prefect_agentenv.protocols.agentenv_ext import AgentEnvExtensions

from ..reference_agents import MOCK_MODEL, ServerProcess, Spec, running

JUDGE = Spec("prefect_agentenv.agents.judge")
FAST = {"poll_interval_seconds": 0.02, "timeout_seconds": 20}
CRITERIA = [JudgeCriterion(id="polite", criterion="The email to Dana is polite and signed."),
            JudgeCriterion(id="bars", criterion="q3.png is a bar chart with one bar per month of Q3.", weight=2.0)]
CASE: dict[str, Any] = {"prompt": "Reply to Dana and chart Q3.", "reply": "Done: emailed Dana, chart in q3.png.",
                        "trajectory": None, "criteria": CRITERIA}
BOTH_PASS = json.dumps({"results": [{"id": "c1", "result": "pass"}, {"id": "c2", "result": "pass"}]})
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, ServerProcess]]:
    """The mock model, then the judge agent launched with the mock as its model."""
    root = tmp_path_factory.mktemp("judge-agent")
    with ExitStack() as stack:
        started = stack.enter_context(running({"model": MOCK_MODEL}, root))
        with pytest.MonkeyPatch.context() as launch_env:
            # What a launcher does: the model endpoint travels in the agent process's environment.
            launch_env.setenv("OPENAI_BASE_URL", started["model"].base_url + "/v1")
            launch_env.setenv("AGENTENV_MODEL", "judge-model")
            launch_env.delenv("OPENAI_API_KEY", raising=False)
            started |= stack.enter_context(running({"judge": JUDGE}, root))
        yield started


@pytest.fixture
async def http(servers: dict[str, ServerProcess]) -> AsyncIterator[httpx.AsyncClient]:
    """A client, with the mock model's script and request log emptied."""
    async with httpx.AsyncClient(timeout=10.0) as client:
        (await client.post(servers["model"].base_url + "/mock/reset")).raise_for_status()
        yield client


@pytest.fixture
def judge(servers: dict[str, ServerProcess], http: httpx.AsyncClient) -> A2AClient:
    return A2AClient(servers["judge"].base_url, http=http)


@pytest.fixture
def sandbox(servers: dict[str, ServerProcess]) -> Path:
    """Where the judge's ``/tmp/file_artifacts`` lives on this machine."""
    folder = servers["judge"].sandbox / "tmp" / "file_artifacts"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


async def _script(servers: dict[str, ServerProcess], http: httpx.AsyncClient, *replies: Any) -> None:
    (await http.post(servers["model"].base_url + "/mock/script", json={"replies": list(replies)})).raise_for_status()


async def _model_requests(servers: dict[str, ServerProcess], http: httpx.AsyncClient) -> list[dict[str, Any]]:
    answer = (await http.get(servers["model"].base_url + "/mock/requests")).json()
    return [request["body"] for request in answer["requests"]]


def _read_file(path: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "read_file", "arguments": {"path": path}}]}


async def test_the_judge_grades_a_judge_prompt_and_its_answer_parses_back_to_the_criteria(
        servers: dict[str, ServerProcess], judge: A2AClient, http: httpx.AsyncClient):
    messages, id_map = build_judge_prompt(**CASE)

    reply = await judge.send(judge_messages_as_text(messages), **FAST)

    rows = parse_judge_output(reply.text, id_map, weights={"bars": 2.0})
    assert reply.state == "completed" and reply.model == "mock" and reply.tool_call_count == 0
    assert [(r.id, r.result, r.weight) for r in rows] == [("polite", "pass", 1.0), ("bars", "pass", 2.0)]
    body = (await _model_requests(servers, http))[0]
    assert body["model"] == "judge-model"
    assert [(m["role"], m["content"]) for m in body["messages"]] == [(m.role, m.content) for m in messages]
    assert [t["function"]["name"] for t in body["tools"]] == ["read_file"]


async def test_run_judge_over_a2a_sends_the_corrective_message_in_the_same_context(
        servers: dict[str, ServerProcess], judge: A2AClient, http: httpx.AsyncClient):
    await _script(servers, http, "They both look fine.")
    ask = AgentAsk(judge, timeout_seconds=20, poll_interval_seconds=0.02)

    result = await run_judge(ask, **CASE)

    assert result.attempts == 2 and [r.result for r in result.rows] == ["pass", "pass"]
    assert len({reply.context_id for reply in ask.replies}) == 1
    retry = (await _model_requests(servers, http))[1]["messages"]
    assert [m["role"] for m in retry] == ["system", "user", "assistant", "user"]
    assert retry[2]["content"] == "They both look fine."
    assert retry[3]["content"].startswith("Your answer could not be used:")


async def test_the_judge_reads_a_text_file_of_its_sandbox_when_its_model_asks(
        servers: dict[str, ServerProcess], judge: A2AClient, http: httpx.AsyncClient, sandbox: Path):
    (sandbox / "summary.md").write_text("# Q3\nJuly 10, August 12, September 9\n")
    await _script(servers, http, _read_file("/tmp/file_artifacts/summary.md"), BOTH_PASS)
    messages, id_map = build_judge_prompt(**CASE, files=["/tmp/file_artifacts/summary.md"])

    reply = await judge.send(judge_messages_as_text(messages), **FAST)

    assert reply.tool_call_count == 1 and reply.text == BOTH_PASS
    tool_message = (await _model_requests(servers, http))[1]["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["content"] == "# Q3\nJuly 10, August 12, September 9\n"
    trajectory = await (await AgentEnvExtensions.of(judge)).get_trajectory(task_id=reply.task_id)
    assert [e["kind"] for e in trajectory.events] == ["message", "model", "tool_call", "tool_result", "model",
                                                      "message"]
    assert trajectory.events[2]["arguments"] == {"path": "/tmp/file_artifacts/summary.md"}
    assert trajectory.events[3]["is_error"] is False


async def test_a_binary_file_is_described_by_name_size_and_type_instead_of_read(
        servers: dict[str, ServerProcess], judge: A2AClient, http: httpx.AsyncClient, sandbox: Path):
    (sandbox / "q3.png").write_bytes(PNG)
    await _script(servers, http, _read_file("/tmp/file_artifacts/q3.png"), BOTH_PASS)

    reply = await judge.send(judge_messages_as_text(build_judge_prompt(**CASE)[0]), **FAST)

    assert reply.state == "completed" and reply.text == BOTH_PASS
    tool_message = (await _model_requests(servers, http))[1]["messages"][-1]["content"]
    assert tool_message == (f"q3.png is a binary file ({len(PNG)} bytes, type image/png); "
                            "its contents cannot be shown as text")


async def test_paths_outside_the_sandbox_and_missing_files_come_back_as_tool_errors(
        servers: dict[str, ServerProcess], judge: A2AClient, http: httpx.AsyncClient):
    await _script(servers, http, _read_file("../../../../etc/passwd"), _read_file("/tmp/file_artifacts/none.csv"),
                  BOTH_PASS)

    reply = await judge.send(judge_messages_as_text(build_judge_prompt(**CASE)[0]), **FAST)

    assert reply.state == "completed" and reply.tool_call_count == 2
    tool_messages = [m["content"] for m in (await _model_requests(servers, http))[2]["messages"] if m["role"] == "tool"]
    assert tool_messages == ["tool error: sandbox path '../../../../etc/passwd' leaves the sandbox",
                             "tool error: there is no file at /tmp/file_artifacts/none.csv"]


async def test_the_last_allowed_model_call_offers_no_tool_so_the_judge_must_answer(
        servers: dict[str, ServerProcess], judge: A2AClient, http: httpx.AsyncClient):
    await (await AgentEnvExtensions.of(judge)).set_agent_config({"max_turns": 2})
    try:
        await _script(servers, http, _read_file("/tmp/file_artifacts/none.csv"))
        reply = await judge.send(judge_messages_as_text(build_judge_prompt(**CASE)[0]), **FAST)
    finally:
        (await http.post(judge.url + "/ext/agent-config", json={"max_turns": None})).raise_for_status()

    bodies = await _model_requests(servers, http)
    assert len(bodies) == 2 and "tools" not in bodies[1]
    assert [r.result for r in parse_judge_output(reply.text, {"c1": "polite", "c2": "bars"})] == ["pass", "pass"]
