"""Agent steps end to end: real env, real reference agents (scripted, user-sim), the artifact store."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.documents import validate_file
from prefect_agentenv.flows.agent_task import run_task_document

from .helpers import EXAMPLES, run_doc, states

pytestmark = pytest.mark.usefixtures("published")

PLAN = json.loads((EXAMPLES / "plans" / "reply-to-dana.json").read_text())["plan"]


def email_and_agent(plan: dict[str, Any] | None = None, **agent: Any) -> list[dict[str, Any]]:
    return [
        {"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": []},
        {"id": "inbox", "type": "load_artifact", "env_id": "email", "artifact_id": "inbox", "depends_on": ["email"]},
        {"id": "assistant", "type": "deploy_agent", "a2a_agent_id": "scripted", "agent_name": "assistant",
         "env_ids": ["email"], "depends_on": ["email"], "agent_config": {"plan": plan or PLAN}, **agent},
    ]


def prompt(**extra: Any) -> dict[str, Any]:
    return {"id": "reply", "type": "prompt_agent", "agent_name": "assistant", "prompt_id": "reply",
            "prompt": "Reply to Dana.", "depends_on": ["inbox", "assistant"], **extra}


async def test_reply_to_dana_runs_end_to_end_with_the_scripted_agent_in_place_of_claude_code() -> None:
    doc = validate_file(EXAMPLES / "reply-to-dana.json").raise_for_problems()
    report = await run_task_document(
        doc, overrides={"a2a_agent_id": "scripted", "assistant.agent_config": json.dumps({"plan": PLAN})},
        execute_in_prefect=False, publish=False)
    assert report.status == "completed", report.error
    assert report.context.deployed_agents["assistant"].a2a_agent_id == "scripted"
    assert report.context.deployed_agents["assistant"].version == "1.0.0"  # as its card declares it
    confinement = report.context.deployed_agents["assistant"].confinement
    assert confinement is not None and confinement.confined, "the agent under evaluation ran confined"
    assert confinement.mechanism.startswith("bwrap ") and confinement.network == "confined"
    email_mcp = report.context.deployed_envs["email"].mcp_url.split("//", 1)[1]
    assert confinement.doors == [f"mcp {email_mcp}"], "its network reaches the env's MCP path, nothing else"
    assert confinement.limits["memory_mb"] > 0 and confinement.limits["cpu_seconds"] > 0


async def test_the_reply_goes_through_the_env_tools_and_the_prompt_response_carries_text_count_and_trajectory() -> None:
    report = await run_doc([
        *email_and_agent(), prompt(),
        {"id": "sent", "type": "env_state_verifier", "env_id": "email", "verifier_id": "sent", "depends_on": ["reply"],
         "assertions": [{"assert": "state_match", "id": "to_dana",
                         "correlate_by": {"resource": "sent", "key": "in_reply_to", "value": "m1"},
                         "assertions": [{"path": "to.0", "expected": "dana@northwind.example"},
                                        {"path": "subject", "expected": "Re: Q3 numbers"}]}]},
    ], "dana")
    assert report.status == "completed", report.error
    response = report.context.prompt_responses["reply"]
    assert response.response.startswith("I replied to Dana")
    assert response.tool_call_count == 3  # email_search, send, and the file write
    assert response.error is None and not response.is_timeout
    assert report.context.metadata.verifications["sent"].score == 1.0
    # The scripted agent calls no model: it is labelled with the run's model, but no mock model was started.
    assert report.context.deployed_agents["assistant"].model == "mock"
    assert [t.label for t in report.teardown if t.label.startswith("mock model")] == []
    with get_artifact_store() as store:
        key = (response.trajectory or "").split("/runs/", 1)[1]
        events = json.loads(store.get_object(key))
    kinds = [e.get("kind") for e in events["events"]]
    assert "tool_call" in kinds


async def test_collected_files_are_handed_to_a_second_agent_with_artifact_from_step_id() -> None:
    report = await run_doc([
        *email_and_agent(), prompt(),
        {"id": "collect", "type": "collect_artifacts", "agent_name": "assistant", "depends_on": ["reply"]},
        {"id": "judge", "type": "deploy_agent", "a2a_agent_id": "scripted", "agent_name": "judge", "depends_on": []},
        {"id": "handoff", "type": "load_artifact", "agent_name": "judge", "artifact_from_step_id": "collect",
         "depends_on": ["collect", "judge"]},
        {"id": "probe", "type": "verify_sandbox", "agent_name": "judge", "verifier_id": "handoff", "depends_on": ["handoff"],
         "checks": [{"id": "copied", "kind": "file_contains", "path": "/tmp/file_artifacts/q3-notes.md",
                     "text": "September"}]},
    ], "handoff")
    assert report.status == "completed", report.error
    collected = report.context.metadata.collected_artifacts["collect"]
    assert list(collected.artifacts) == ["q3-notes.md"]
    assert collected.file_artifact_universe is not None and collected.file_artifact_universe.id == "handoff-collect"
    (loaded,) = report.context.metadata.loaded_file_artifact_universes
    assert loaded.agent_name == "judge" and loaded.folder == "/tmp/file_artifacts"
    assert loaded.files == ["q3-notes.md"]
    assert report.context.metadata.verifications["handoff"].score == 1.0


async def test_an_empty_artifact_folder_collects_nothing_without_failing() -> None:
    report = await run_doc([
        *email_and_agent({"reply": "nothing written"}), prompt(),
        {"id": "collect", "type": "collect_artifacts", "agent_name": "assistant", "depends_on": ["reply"]},
    ])
    assert report.status == "completed", report.error
    assert report.context.metadata.collected_artifacts["collect"].artifacts == {}


async def test_named_files_none_of_which_exist_fail_the_collect_step() -> None:
    report = await run_doc([
        *email_and_agent({"reply": "nothing written"}), prompt(),
        {"id": "collect", "type": "collect_artifacts", "agent_name": "assistant", "artifact_paths": ["q3.png"],
         "depends_on": ["reply"]},
    ])
    assert report.status == "failed" and "none of the named files could be read" in (report.error or "")


async def test_a_path_that_leaves_the_sandbox_once_its_variable_is_resolved_fails_the_step(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Written as is, such a path is refused by `validate` (tests/documents/invalid); a ${VAR} is
    # only known when the step starts.
    monkeypatch.setenv("COLLECT_FROM", "../../../../etc/passwd")
    report = await run_doc([
        *email_and_agent({"reply": "ok"}), prompt(),
        {"id": "collect", "type": "collect_artifacts", "agent_name": "assistant",
         "artifact_paths": ["${COLLECT_FROM}"], "depends_on": ["reply"]},
    ])
    assert report.status == "failed", report.error
    assert "with its ${VAR}s resolved: artifact_paths.0: artifact path" in (report.error or "")
    assert "has a '..' segment" in (report.error or "")
    assert report.steps[-1].id == "collect" and report.steps[-1].error_type == "StepError"


async def test_a_failing_agent_leaves_its_prompt_response_and_fails_the_step() -> None:
    report = await run_doc([
        *email_and_agent({"fail": {"error_type": "tool_error", "message": "mailbox locked"}}),
        prompt(fail_task_on_error=False),
        {"id": "check", "type": "agent_prompt_response_verifier", "prompt_id": "reply", "verifier_id": "check",
         "response_contains": ["Dana"], "depends_on": ["reply"]},
    ])
    assert states(report)["reply"] == "tolerated"
    response = report.context.prompt_responses["reply"]
    assert "mailbox locked" in (response.error or "")
    check = report.context.metadata.verifications["check"]
    assert check.score == 0.0 and check.results[0].id == "prompt_error"


async def test_an_agent_that_hangs_past_its_timeout_is_cancelled_and_marked_timed_out() -> None:
    report = await run_doc([*email_and_agent({"sleep_seconds": 60, "reply": "late"}),
                            prompt(timeout_seconds=2, fail_task_on_error=False)])
    assert states(report)["reply"] == "tolerated"
    response = report.context.prompt_responses["reply"]
    assert response.is_timeout is True and "did not finish within 2s" in (response.error or "")
    assert report.duration_s < 30


async def test_an_agent_that_dies_mid_prompt_fails_clearly_and_is_cleaned_up() -> None:
    report = await run_doc([*email_and_agent({"die": True}), prompt()])
    assert report.status == "failed"
    assert "agent 'assistant' failed" in (report.error or "")
    assert any(words in (report.error or "") for words in ("stopped answering", "connection to the agent"))
    agent = report.context.deployed_agents["assistant"]
    with pytest.raises(httpx.TransportError):
        httpx.get(agent.a2a_url + "/.well-known/agent-card.json", timeout=2)
    assert not Path(agent.sandbox or "").exists(), "the sandbox is removed at teardown"


async def test_a_three_turn_conversation_with_the_user_simulator() -> None:
    report = await run_doc([
        *email_and_agent([{"reply": "Which numbers do you mean?"}, {"reply": "Done: I checked September."},
                          {"reply": "You are welcome."}]),
        {"id": "user", "type": "deploy_agent", "a2a_agent_id": "user-sim", "agent_name": "user", "depends_on": [],
         "agent_config": {"replies": ["The Q3 revenue numbers.", "Thanks, anything else?"], "done_after": 3}},
        prompt(max_conversation_turns=3, user_agent_name="user", depends_on=["inbox", "assistant", "user"]),
    ], "conversation")
    assert report.status == "completed", report.error
    assert report.context.prompt_responses["reply"].response == "You are welcome."
    with get_artifact_store() as store:
        runs = store.list_objects()
        turns_key = next(k for k in runs if k.endswith("conversations/reply.json"))
        turns = json.loads(store.get_object(turns_key))
    assert [t["role"] for t in turns] == ["agent", "user", "agent", "user", "agent"]
    assert turns[1]["message"] == "The Q3 revenue numbers." and turns[3]["message"] == "Thanks, anything else?"


async def test_the_agent_config_override_and_agent_id_override_apply_per_agent_name() -> None:
    steps = [*email_and_agent({"reply": "from the document"}), prompt()]
    steps[2]["a2a_agent_id"] = "claude-code"
    result_doc = __import__("prefect_agentenv.documents", fromlist=["validate_data"]).validate_data(steps).document
    report = await run_task_document(
        result_doc, overrides={"assistant.a2a_agent_id": "scripted",
                               "assistant.agent_config": json.dumps({"plan": {"reply": "from the override"}})},
        execute_in_prefect=False, publish=False)
    assert report.status == "completed", report.error
    assert report.context.prompt_responses["reply"].response == "from the override"


@pytest.mark.usefixtures("prefect_harness")
async def test_an_a2a_0_3_agent_registered_as_a_block_is_deployed_and_prompted() -> None:
    from prefect_agentenv.blocks import A2AAgent

    legacy = Path(__file__).resolve().parents[1] / "protocols" / "legacy_a2a_agent.py"
    await A2AAgent(command=[sys.executable, str(legacy), "--host", "{host}", "--port", "{port}"],
                   card_path="/.well-known/agent.json", version="0.3-test",
                   install_paths=[str(legacy.parent)]).save("legacy-agent", overwrite=True)
    report = await run_doc([
        {"id": "agent", "type": "deploy_agent", "a2a_agent_id": "legacy-agent", "agent_name": "old", "depends_on": []},
        {"id": "ask", "type": "prompt_agent", "agent_name": "old", "prompt_id": "ask", "prompt": "hello there"},
    ])
    assert report.status == "completed", report.error
    response = report.context.prompt_responses["ask"]
    assert "hello there" in response.response and response.tool_call_count is not None


async def test_config_fields_the_agent_card_does_not_list_are_reported_not_sent_and_the_run_goes_on() -> None:
    steps = [*email_and_agent(), prompt(max_turns=4)]
    steps[2]["agent_config"]["temperature"] = 0.2

    report = await run_doc(steps)

    assert report.status == "completed", report.error
    assert [r.model_dump() for r in report.context.metadata.unsupported_agent_config] == [{
        "step_id": "assistant", "agent_name": "assistant", "field": "agent_config.temperature",
        "extension": "urn:agentenv:agent-config/v1",
        "reason": "the agent's card does not list the field among the agent-config fields it supports"}]
    assert any("cannot take agent_config.temperature" in w for w in report.warnings)


# A task widens its agent's network (docs/security.md, "Widening it"), as a block does.

def free_ports(count: int) -> list[str]:
    """``127.0.0.1:<port>`` endpoints nothing listens on (a door needs no listener until the agent connects)."""
    import socket

    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [f"127.0.0.1:{sock.getsockname()[1]}" for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


async def test_a_task_widens_its_agent_s_network_and_the_record_and_the_setup_say_so() -> None:
    from prefect_agentenv.results import SetupFingerprint
    from prefect_agentenv.results.store.fingerprint import setup_from_report

    [endpoint] = free_ports(1)
    allowed = await run_doc([*email_and_agent(network={"allow": [endpoint]}), prompt()], "allow")
    public = await run_doc([*email_and_agent(network="public"), prompt()], "public")

    assert allowed.status == "completed" and public.status == "completed", (allowed.error, public.error)
    record = allowed.context.deployed_agents["assistant"].confinement
    email_mcp = allowed.context.deployed_envs["email"].mcp_url.split("//", 1)[1]
    assert record is not None and record.network == "confined"
    assert sorted(record.doors) == sorted([f"allowed {endpoint}", f"mcp {email_mcp}"]), "the task's door is open"
    record = public.context.deployed_agents["assistant"].confinement
    assert record is not None and record.confined and (record.network, record.doors) == ("public", [])
    [agent] = setup_from_report(public, SetupFingerprint()).agents
    assert agent.confinement == "confined, public network", "the result's setup marks it as a block widening"


@pytest.mark.usefixtures("prefect_harness")
async def test_a_task_s_widening_adds_to_its_block_s() -> None:
    from prefect_agentenv.agents.catalog import REFERENCE_AGENTS
    from prefect_agentenv.blocks import A2AAgent

    block_door, task_door = free_ports(2)
    await A2AAgent(command=REFERENCE_AGENTS["scripted"].command(), card_path="/.well-known/agent-card.json",
                   network={"allow": [block_door]}).save("widened-scripted", overwrite=True)
    report = await run_doc([{"id": "agent", "type": "deploy_agent", "a2a_agent_id": "widened-scripted",
                             "agent_name": "a", "network": {"allow": [task_door, block_door]}}], "both")

    assert report.status == "completed", report.error
    record = report.context.deployed_agents["a"].confinement
    assert record is not None
    assert [door for door in record.doors if door.startswith("allowed ")] == [f"allowed {block_door}",
                                                                              f"allowed {task_door}"]


@pytest.mark.parametrize(("network", "says"), [
    ({"allow": ["127.0.0.1"]}, "network allow entry '127.0.0.1' is not host:port (127.0.0.1:9000)"),
    ({"allow": ["127.0.0.1:70000"]}, "network allow entry '127.0.0.1:70000' is not host:port (127.0.0.1:9000)"),
    ({"allow": []}, "network is public or {allow: [host:port, ...]}, not {'allow': []}"),
    ("private", "network is public or {allow: [host:port, ...]}, not 'private'"),
])
def test_a_bad_task_network_is_a_document_error_at_its_step_and_field(network: object, says: str) -> None:
    from prefect_agentenv.documents import validate_data

    result = validate_data([{"id": "agent", "type": "deploy_agent", "a2a_agent_id": "scripted",
                             "network": network}])

    assert [(p.step_id, p.path) for p in result.problems] == [("agent", "$[0].network")], [
        p.render() for p in result.problems]
    assert result.problems[0].message == says
