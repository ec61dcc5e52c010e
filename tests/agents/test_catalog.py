"""The scripted agent and the user simulator as real processes: an email env's tools, files in
the sandbox, failures, timeouts, a crash, the extensions, and a three-turn conversation."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from prefect_agentenv.agents.scripted.agent import DIE_EXIT_CODE
from prefect_agentenv.exceptions import ProtocolError
from prefect_agentenv.protocols.a2a import A2AClient, PromptTimeoutError, fetch_card
from prefect_agentenv.protocols.agentenv_ext import AgentEnvExtensions
from prefect_agentenv.protocols.env import EnvClient

from .reference_agents import EMAIL_ENV, SCRIPTED, USER_SIM, ServerProcess, running

FAST = {"poll_interval_seconds": 0.02, "timeout_seconds": 20}
DANA = {"id": "m1", "from": "dana@example.com", "to": ["me@example.com"], "subject": "Q3 numbers",
        "body": "Could you send me the Q3 numbers?"}


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, ServerProcess]]:
    """An email env, a scripted agent, one that will crash, and a user simulator."""
    specs = {"email": EMAIL_ENV, "scripted": SCRIPTED, "doomed": SCRIPTED, "user": USER_SIM}
    with running(specs, tmp_path_factory.mktemp("reference-agents")) as started:
        yield started


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10.0) as client:
        yield client


@pytest.fixture
def scripted(servers: dict[str, ServerProcess], http: httpx.AsyncClient) -> A2AClient:
    return A2AClient(servers["scripted"].base_url, http=http)


async def _plan(client: A2AClient, plan: dict[str, Any], **kwargs: Any) -> Any:
    return await client.send(f"PLAN: {json.dumps(plan)}", **{**FAST, **kwargs})


async def test_the_scripted_agent_answers_with_email_tools_and_writes_its_artifact_in_the_sandbox(
        servers: dict[str, ServerProcess], scripted: A2AClient, http: httpx.AsyncClient):
    env = EnvClient(servers["email"].base_url, http)
    await env.data_reset()
    await env.data_add([{"kind": "data", "data": {"emails": [DANA]}}])
    extensions = await AgentEnvExtensions.of(scripted)
    await extensions.add_mcp_server(servers["email"].base_url + "/mcp", name="email")
    plan = {"tool_calls": [
        {"server": "email", "tool": "email_search", "arguments": {"query": "Q3"}},
        {"tool": "send", "server": "email", "arguments": {"to": "dana@example.com", "subject": "Re: Q3 numbers",
                                                         "body": "Here they are.", "in_reply_to": "m1"}}],
        "files": [{"path": "/app/artifact/summary.md", "content": "# Q3\nReplied to Dana.\n"}],
        "reply": "Replied to {tool_results[0][emails][0][from]} as {tool_results[1][id]}."}
    config = await extensions.set_agent_config({"plan": plan, "max_turns": 4, "temperature": 0.0})

    reply = await scripted.send("Reply to Dana.", **FAST)

    sent = (await env.export_state())["sent"]
    assert config.dropped == ["temperature"]
    assert [(m["to"], m["in_reply_to"]) for m in sent] == [(["dana@example.com"], "m1")]
    assert (reply.state, reply.text) == ("completed", f"Replied to dana@example.com as {sent[0]['id']}.")
    assert reply.tool_call_count == 3
    artifact = servers["scripted"].sandbox / "app" / "artifact" / "summary.md"
    assert artifact.read_text() == "# Q3\nReplied to Dana.\n"
    trajectory = await extensions.get_trajectory(task_id=reply.task_id)
    calls = [e["tool"] for e in trajectory.events if e["kind"] == "tool_call"]
    assert calls == ["email_search", "send", "write_file"]
    assert Path(reply.trajectory or "").is_file() and trajectory.path == reply.trajectory


async def test_a_plan_that_fails_ends_the_task_failed_with_its_error(scripted: A2AClient):
    reply = await _plan(scripted, {"fail": {"error_type": "quota_exceeded", "message": "out of budget",
                                            "error_code": "Q1"}})

    assert (reply.state, reply.text) == ("failed", "out of budget")
    assert reply.error is not None
    assert (reply.error.type, reply.error.code, reply.error.message) == ("quota_exceeded", "Q1", "out of budget")
    assert reply.tool_call_count == 0


async def test_an_invalid_plan_is_a_bad_plan_failure_not_a_crash(scripted: A2AClient):
    reply = await scripted.send('PLAN: {"tool_calls": "all of them"}', **FAST)

    assert reply.state == "failed" and reply.error is not None and reply.error.type == "bad_plan"
    assert "tool_calls" in reply.error.message


async def test_a_hanging_agent_is_cancelled_at_the_timeout(scripted: A2AClient):
    started = time.monotonic()
    with pytest.raises(PromptTimeoutError) as caught:
        await _plan(scripted, {"sleep_seconds": 60}, timeout_seconds=0.8)

    assert time.monotonic() - started < 3
    reply = caught.value.reply
    assert reply.is_timeout and reply.state == "canceled"
    events = (await (await AgentEnvExtensions.of(scripted)).get_trajectory(task_id=reply.task_id)).events
    assert events[-1]["kind"] == "error" and events[-1]["error_type"] == "cancelled"


async def test_an_agent_that_dies_mid_prompt_is_a_protocol_error_naming_it(
        servers: dict[str, ServerProcess], http: httpx.AsyncClient):
    doomed = servers["doomed"]
    with pytest.raises(ProtocolError, match="stopped answering") as caught:
        await _plan(A2AClient(doomed.base_url, http=http), {"sleep_seconds": 0.3, "die": True})

    assert doomed.base_url in str(caught.value) and "may have died" in str(caught.value)
    assert doomed.process.wait(timeout=5) == DIE_EXIT_CODE


async def test_a_server_without_an_agent_card_is_a_protocol_error_listing_the_paths_tried(
        servers: dict[str, ServerProcess], http: httpx.AsyncClient):
    with pytest.raises(ProtocolError, match="no A2A agent card found") as caught:
        await fetch_card(servers["email"].base_url, http=http)

    assert caught.value.code == 404 and "/.well-known/agent.json" in str(caught.value)


async def test_skills_are_registered_and_written_into_the_sandbox(
        servers: dict[str, ServerProcess], scripted: A2AClient):
    extensions = await AgentEnvExtensions.of(scripted)
    await extensions.add_skill("triage", "How to triage a mailbox", "# Triage\nNewest first.\n")

    assert {"name": "triage", "description": "How to triage a mailbox"} in [
        skill.to_wire() for skill in await extensions.list_skills()]
    skill = servers["scripted"].sandbox / "skills" / "triage" / "SKILL.md"
    assert skill.read_text() == "# Triage\nNewest first.\n"


async def test_the_mcp_servers_an_agent_lists_show_header_names_but_never_their_values(
        servers: dict[str, ServerProcess], scripted: A2AClient):
    extensions = await AgentEnvExtensions.of(scripted)
    await extensions.add_mcp_server(servers["email"].base_url + "/mcp", name="email-with-token",
                                    headers={"Authorization": "Bearer s3cret"})

    listed = [server.to_wire() for server in await extensions.list_mcp_servers()]
    assert {"name": "email-with-token", "url": servers["email"].base_url + "/mcp",
            "headers": ["Authorization"]} in listed
    assert "s3cret" not in json.dumps(listed)


async def test_agent_config_reads_back_what_was_set_and_refuses_unsupported_fields(
        scripted: A2AClient, http: httpx.AsyncClient):
    extensions = await AgentEnvExtensions.of(scripted)
    await extensions.set_agent_config({"system_prompt": "Be brief.", "model": "mock-1"})

    config = await extensions.get_agent_config()
    assert (config["system_prompt"], config["model"]) == ("Be brief.", "mock-1")
    endpoint = extensions.operation("urn:agentenv:agent-config/v1", "set", purpose="test").url
    refused = await http.post(endpoint, json={"temperature": 1})
    assert refused.status_code == 400 and refused.json()["unsupported"] == ["temperature"]


async def test_a_three_turn_conversation_between_the_scripted_agent_and_the_user_sim(
        servers: dict[str, ServerProcess], scripted: A2AClient, http: httpx.AsyncClient):
    user = A2AClient(servers["user"].base_url, http=http, protocol="0.3")
    replies = ['Q3 of this year.\nPLAN: {"reply": "Here are the Q3 numbers (turn {turn})."}',
               'Please add a chart.\nPLAN: {"reply": "Chart added (turn {turn}).", '
               '"files": [{"path": "/app/artifact/chart.txt", "content": "a chart"}]}']
    await (await AgentEnvExtensions.of(user)).set_agent_config({"replies": replies, "done_after": 3})
    prompt = 'Find the quarterly numbers.\nPLAN: {"reply": "Which quarter? (turn {turn})"}'
    assistant_context = user_context = None
    turns: list[tuple[str, dict[str, Any]]] = []

    for _ in range(5):
        answer = await scripted.send(prompt, context_id=assistant_context, **FAST)
        assistant_context = answer.context_id
        user_turn = await user.send(answer.text, context_id=user_context, **FAST)
        user_context = user_turn.context_id
        said = json.loads(user_turn.text)
        turns.append((answer.text, said))
        if said["done"]:
            assert user_turn.data["done"] is True
            break
        prompt = said["message"]

    assert [text for text, _ in turns] == ["Which quarter? (turn 1)", "Here are the Q3 numbers (turn 2).",
                                           "Chart added (turn 3)."]
    assert [said["done"] for _, said in turns] == [False, False, True]
    assert [said["message"] for _, said in turns][:2] == replies
    assert (servers["scripted"].sandbox / "app" / "artifact" / "chart.txt").read_text() == "a chart"
    history = await (await AgentEnvExtensions.of(scripted)).get_trajectory(context_id=assistant_context)
    assert [e["text"].splitlines()[0] for e in history.events if e.get("role") == "user"] == [
        "Find the quarterly numbers.", "Q3 of this year.", "Please add a chart."]
