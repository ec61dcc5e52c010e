"""The Python agent API end to end: reference agents and the records env on loopback, real scoring.

Each test is one rollout (or a few); the records env, the scripted agent and the llm agent with
the mock model (labelled: the only mock) are started by the rollouts themselves.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from prefect_agentenv import AgentConfig, ScoringConfig, Task, TaskData, make_agent
from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.cli import app
from prefect_agentenv.exceptions import ConfigurationError
from prefect_agentenv.protocols.agentenv_ext import AgentEnvExtensions
from prefect_agentenv.protocols.steering import STEERING_EXTENSION
from prefect_agentenv.settings import get_settings
from scoring_scripts import VERIFY
from servers import mock_model

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SUBMIT = {"tool_calls": [{"tool": "create_request", "arguments": {"patient_id": "P1", "cpt_code": "72148",
                                                                 "status": "submitted"}}],
          "reply": "Submitted {tool_results[0][request_id]}."}
STATE = {"type": "env_state_verifier", "verifier_id": "state",
         "assertions": [{"assert": "record-count", "id": "submitted", "resource": "requests",
                         "where": {"status": "submitted", "cpt_code": "72148"}, "equals": 1}]}
REPLY = {"type": "agent_prompt_response_verifier", "verifier_id": "reply", "response_contains": ["Submitted"]}


@pytest.fixture(scope="module", autouse=True)
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A module-wide package home with the clinic records and the verify script published."""
    folder = tmp_path_factory.mktemp("api-home")
    old = os.environ.get("PREFECT_AGENTENV_HOME")
    os.environ["PREFECT_AGENTENV_HOME"] = str(folder)
    get_settings.cache_clear()
    (folder / "verify.py").write_text(VERIFY)
    with get_artifact_store() as store:
        store.publish_environment("clinic", "records", "clinic.json", EXAMPLES / "artifacts" / "clinic.json")
        store.publish_files("checks", {"verify.py": folder / "verify.py"})
    yield folder
    if old is None:
        os.environ.pop("PREFECT_AGENTENV_HOME", None)
    else:
        os.environ["PREFECT_AGENTENV_HOME"] = old
    get_settings.cache_clear()


def checks(attempts: Path) -> dict[str, Any]:
    return {"type": "env_outcome_verifier", "verifier_id": "checks", "script_artifact_id": "checks",
            "score_aggregator": "weighted_average", "scoring_env": {"ATTEMPT_DIR": str(attempts)}}


def records_task(attempts: Path, **scoring: Any) -> Task:
    return Task(TaskData(id="prior-auth", prompt="Submit the prior auth for P1.", envs={"records": "clinic"},
                         verifiers=[STATE, REPLY, checks(attempts)],
                         scoring=ScoringConfig(**scoring) if scoring else ScoringConfig()))


async def test_run_returns_a_scored_trace_and_shared_scoring_is_not_retried(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAIL_FIRST", "1")
    config = AgentConfig(agent="scripted", agent_config={"plan": SUBMIT})
    async with make_agent(config) as agent:
        trace = await agent.run(records_task(tmp_path, retries={"max_retries": 3}))
    assert trace.reply == "Submitted REQ-0001." and len(trace.turns) == 1
    assert trace.tool_call_count == 1 and [c.get("tool") or c.get("name") for c in trace.tool_calls] == ["create_request"]
    assert trace.rewards == {"state": 1.0, "reply": 1.0, "checks": 0.0}
    assert "the first attempt fails" in trace.verifications["checks"]["error"]
    assert trace.reward == pytest.approx(2 / 3)
    assert (trace.is_truncated, trace.is_timeout) == (False, False)
    assert trace.info["scoring"]["mode"] == "shared" and trace.info["scoring"]["attempts"] == 1
    assert len(list(tmp_path.glob("attempt-*"))) == 1


async def test_isolated_scoring_restores_the_submission_into_a_fresh_env_and_retries_with_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAIL_FIRST", "1")
    plan = {**SUBMIT, "files": [{"path": "summary.txt", "content": "REQ-0001 submitted"}]}
    config = AgentConfig(agent="scripted", agent_config={"plan": plan},
                         scoring=ScoringConfig(mode="isolated", env={"SCORING_TOKEN": "${LATE_TOKEN:-early}"},
                                               network="loopback"))
    task = records_task(tmp_path)
    fresh = "import os, sys; sys.exit(0 if os.getcwd() == '/sandbox' and os.listdir('.') else 1)"
    task.data.verifiers.append({"type": "verify_sandbox", "verifier_id": "files", "checks": [
        {"id": "summary", "kind": "file_contains", "path": "summary.txt", "text": "REQ-0001 submitted"},
        {"id": "fresh", "kind": "command_succeeds", "command": [sys.executable, "-c", fresh]}]})
    task.data.verifiers.append({"type": "rubrics_verifier", "verifier_id": "judge", "judge_mode": "model",
                                "criteria": [{"id": "named", "criterion": "The reply names the request."}]})
    async with make_agent(config) as agent:
        async with agent.interaction(task) as chat:
            with pytest.raises(ValueError, match="opening turn"):
                await chat.turn("not yet")
            early = await chat.send("too early", mode="queue")
            segment = await chat.turn()
            monkeypatch.setenv("LATE_TOKEN", "late-value")  # read when scoring starts, after the turn
        trace = chat.trace
    assert early.accepted is False and "opening turn" in (early.reason or "")
    assert segment.messages == ["Submit the prior auth for P1."] and segment.last_reply == "Submitted REQ-0001."
    assert trace is not None and trace.info["scoring"]["mode"] == "isolated"
    assert trace.info["scoring"]["attempts"] == 2 and trace.info["scoring"]["network"] == "loopback"
    # the agent's request and file, restored into a fresh env and a fresh sandbox
    # and judged there (by the built-in mock model, which passes every criterion: labelled mock)
    assert trace.rewards == {"state": 1.0, "reply": 1.0, "checks": 1.0, "files": 1.0, "judge": 1.0}
    judge = trace.verifications["judge"]
    assert judge["results"][0]["id"] == "named" and (judge["judge"]["mode"], judge["judge"]["mock"]) == ("model", True)
    assert trace.verifications["checks"]["results"][0]["justification"] == "saw ***"  # redacted
    assert "late-value" not in trace.model_dump_json()
    urls = [p.read_text() for p in sorted(tmp_path.glob("attempt-*"))]
    assert len(urls) == 2 and urls[0] != urls[1]  # each attempt in a fresh env


async def test_an_interaction_runs_until_terminated_and_later_turns_consume_nothing(tmp_path: Path) -> None:
    plan = {"reply": "turn {turn}: {prompt}", "sleep_seconds": 0.6}
    config = AgentConfig(agent="scripted", agent_config={"plan": plan}, max_turns=3)
    task = Task(TaskData(prompt=None, verifiers=[{**REPLY, "response_contains": ["you said"]}]))
    async with make_agent(config) as agent:
        async with agent.interaction(task) as chat:
            with pytest.raises(ValueError, match="needs a message"):
                await chat.turn()
            segment = await chat.turn("hello")
            busy = asyncio.create_task(chat.turn(f"you said: {segment.last_reply}"))
            await asyncio.sleep(0.2)
            queued = await chat.send("Also check the empty-input case.", mode="queue", message_id="followup-1")
            segment = await busy
            while not segment.terminated:
                segment = await chat.turn(f"you said: {segment.last_reply}")
            after = await chat.turn("ignored")
        trace = chat.trace
    assert (queued.message_id, queued.accepted, queued.status) == ("followup-1", True, "delivered")
    assert [len(s.messages) for s in chat.segments] == [1, 1, 2]
    assert chat.segments[2].messages[0] == "Also check the empty-input case."  # queued first, in order
    assert segment.stop_reason == "max_turns" and segment.is_truncated
    assert after.terminated and after.messages == [] and after.last_reply == "" and after.index == 3
    assert trace is not None and len(trace.turns) == 3 and trace.is_truncated
    assert trace.rewards == {"reply": 1.0} and trace.reward == 1.0


async def test_steer_reaches_the_live_turn_of_an_agent_whose_card_declares_steering() -> None:
    plan = {"reply": "done with {prompt}; also: {steered}", "sleep_seconds": 1.0}
    async with make_agent(AgentConfig(agent="scripted", agent_config={"plan": plan})) as agent:
        async with agent.interaction(Task(TaskData(prompt=None))) as chat:
            card = await chat.client.card()
            busy = asyncio.create_task(chat.turn("Check the parser."))
            while chat.live_task_id is None:  # the turn's A2A task is working
                await asyncio.sleep(0.05)
            steered = await chat.send("Also check the empty-input case.", message_id="steer-1")
            segment = await busy
            trajectory = await AgentEnvExtensions.of(chat.client)
            events = (await trajectory.get_trajectory(context_id=chat.context_id)).events
        trace = chat.trace
    assert STEERING_EXTENSION in [e["uri"] for e in card.extensions]
    assert (steered.mode, steered.accepted, steered.status) == ("steer", True, "delivered")
    # one turn, one A2A task: the agent read the message before it replied
    assert segment.last_reply == "done with Check the parser.; also: Also check the empty-input case."
    assert segment.messages == ["Check the parser.", "Also check the empty-input case."]
    assert {"kind": "message", "role": "user", "text": "Also check the empty-input case.", "steered": True} in [
        {k: e.get(k) for k in ("kind", "role", "text", "steered")} for e in events]
    assert trace is not None and len(trace.turns) == 1


@pytest.fixture(scope="module")
def model_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with mock_model(tmp_path_factory.mktemp("api-model") / "mock-model.log") as server:
        yield server.base_url


@pytest.fixture
def cut_off_model(model_server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The mock model, answering with a response cut at the token cap (finish_reason length)."""
    httpx.post(f"{model_server}/mock/reset", timeout=5).raise_for_status()
    reply = {"content": "This answer runs on and on", "finish_reason": "length"}
    httpx.post(f"{model_server}/mock/script", json={"replies": [reply, reply]}, timeout=5).raise_for_status()
    monkeypatch.setenv("OPENAI_BASE_URL", f"{model_server}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-456")
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.mark.usefixtures("cut_off_model")
@pytest.mark.parametrize(("policy", "reward"), [("zero", 0.0), ("exclude", None)])
async def test_a_truncated_run_is_not_scored_when_skip_on_truncated_and_its_reward_follows_the_policy(
        policy: str, reward: float | None) -> None:
    task = Task(TaskData(prompt="Explain.", verifiers=[{**REPLY, "response_contains": ["runs"]}],
                         scoring=ScoringConfig(skip_on_truncated=True)))
    async with make_agent(AgentConfig(agent="llm", max_turn_tokens=5,
                                      scoring=ScoringConfig(skip_policy=policy))) as agent:
        trace = await agent.run(task)
    assert trace.is_truncated and trace.turns[0].stop_reason == "max_turn_tokens"
    assert trace.info["scoring_skipped"] == "truncated" and trace.rewards == {} and trace.reward == reward
    assert trace.reply == "This answer runs on and on"  # finalisation still ran


async def test_steer_is_refused_and_queue_waits_for_the_next_turn_with_an_agent_without_steering(
        model_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    httpx.post(f"{model_server}/mock/reset", timeout=5).raise_for_status()
    replies = [{"content": "first answer", "delay_seconds": 1.0}, {"content": "second answer"}]
    httpx.post(f"{model_server}/mock/script", json={"replies": replies}, timeout=5).raise_for_status()
    monkeypatch.setenv("OPENAI_BASE_URL", f"{model_server}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-456")
    get_settings.cache_clear()
    try:
        async with make_agent(AgentConfig(agent="llm")) as agent:  # the llm agent takes no live steering
            async with agent.interaction(Task(TaskData(prompt=None))) as chat:
                busy = asyncio.create_task(chat.turn("hello"))
                while chat.live_task_id is None:
                    await asyncio.sleep(0.05)
                steered = await chat.send("Stop!")
                queued = await chat.send("And the empty input?", mode="queue")
                first = await busy
                second = await chat.turn("thanks")
            card = await chat.client.card()
    finally:
        get_settings.cache_clear()
    assert STEERING_EXTENSION not in [e["uri"] for e in card.extensions]
    assert steered.accepted is False and "steering" in (steered.reason or "")
    assert first.messages == ["hello"] and first.last_reply == "first answer"
    assert queued.status == "delivered" and second.messages == ["And the empty input?", "thanks"]
    assert second.last_reply == "second answer"


async def test_a_run_past_its_deadline_is_a_timeout_and_skip_on_timeout_skips_scoring() -> None:
    config = AgentConfig(agent="scripted", agent_config={"plan": {"sleep_seconds": 4}}, timeout_seconds=1.5,
                         scoring=ScoringConfig(skip_on_timeout=True))
    async with make_agent(config) as agent:
        trace = await agent.run(Task(TaskData(prompt="Take your time.", verifiers=[REPLY])))
    assert trace.is_timeout and trace.info["stop_reason"] == "timeout"
    assert trace.info["scoring_skipped"] == "timeout" and trace.reward == 0.0


async def test_a_task_without_a_prompt_cannot_run_in_one_shot_and_a_bad_verifier_fails_before_deploying() -> None:
    async with make_agent(AgentConfig(agent="scripted")) as agent:
        with pytest.raises(ValueError, match="interaction"):
            await agent.run(Task(TaskData(prompt=None)))
        with pytest.raises(ConfigurationError, match=r"verifiers\[0\]"):
            await agent.run(Task(TaskData(prompt="Hi", verifiers=[{"type": "env_state_verifier"}])))


async def test_send_wakes_an_idle_interaction_and_leaving_the_block_cancels_what_is_still_queued() -> None:
    config = AgentConfig(agent="scripted", agent_config={"plan": {"reply": "got: {prompt}", "sleep_seconds": 0.8}})
    async with make_agent(config) as agent:
        async with agent.interaction(Task(TaskData(prompt=None))) as chat:
            await chat.turn("hi")
            woke = await chat.send("first", mode="queue")          # idle: starts a turn now
            woken = await chat.turn()                               # the turn send started
            late = await chat.send("second", mode="queue")          # wakes another turn…
            left = await chat.send("third", mode="queue")           # …and this one waits for the next
        trace = chat.trace
    assert (await chat.turn("after the block")).terminated  # the rollout is over: nothing is sent
    assert woke.status == "delivered" and woken.messages == ["first"] and woken.last_reply == "got: first"
    assert late.status == "delivered" and (left.accepted, left.status) == (True, "cancelled")
    assert trace is not None and [s.messages for s in trace.turns][:2] == [["hi"], ["first"]]


def test_the_rollout_command_runs_a_task_document_with_a_toml_agent_config(tmp_path: Path) -> None:
    (tmp_path / "task.yaml").write_text(json.dumps({"id": "submit", "steps": [
        {"id": "records", "type": "deploy_env", "env_id": "records"},
        {"id": "seed", "type": "load_artifact", "env_id": "records", "artifact_id": "clinic"},
        {"id": "agent", "type": "deploy_agent", "a2a_agent_id": "scripted", "agent_name": "assistant"},
        {"id": "ask", "type": "prompt_agent", "agent_name": "assistant", "prompt_id": "ask",
         "prompt": "Submit the prior auth for P1."},
        {**STATE, "id": "state", "env_id": "records"}, {**REPLY, "id": "reply", "prompt_id": "ask"}]}))
    (tmp_path / "agent.toml").write_text(
        '[env.agent]\nagent = "scripted"\nmax_turns = 2\n\n[env.agent.agent_config.plan]\n'
        f'reply = "{SUBMIT["reply"]}"\ntool_calls = [{{tool = "create_request", arguments = '
        '{patient_id = "P1", cpt_code = "72148", status = "submitted"}}]\n\n'
        '[env.agent.scoring]\nskip_on_truncated = true\nskip_policy = "exclude"\n')
    result = CliRunner().invoke(app, ["rollout", str(tmp_path / "task.yaml"), "--agent-config",
                                      str(tmp_path / "agent.toml"), "--json", str(tmp_path / "trace.json")])
    assert result.exit_code == 0, result.output
    assert "task submit: reward 1.0" in result.output and "reply: Submitted REQ-0001." in result.output
    assert json.loads((tmp_path / "trace.json").read_text())["rewards"] == {"state": 1.0, "reply": 1.0}
    bad = CliRunner().invoke(app, ["rollout", str(tmp_path / "task.yaml"), "--agent-config", str(tmp_path)])
    assert bad.exit_code == 2 and "error:" in bad.output
