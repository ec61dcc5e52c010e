"""The llm reference agent as a real process: the mock model, an email env, A2A prompts, its extensions."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest

from prefect_agentenv.agents.llm.agent import ServerHeaders
from prefect_agentenv.agents.state import AgentState, McpServerConfig
from prefect_agentenv.protocols.a2a import A2AClient
from prefect_agentenv.protocols.agentenv_ext import AgentEnvExtensions
from prefect_agentenv.protocols.env import EnvClient
from servers import free_port

from ..reference_agents import EMAIL_ENV, MOCK_MODEL, ServerProcess, Spec, running

LLM = Spec("prefect_agentenv.agents.llm")
LAUNCHED_MODEL = "launcher-model"
FAST = {"poll_interval_seconds": 0.02, "timeout_seconds": 20}
DANA = {"id": "m1", "from": "dana@example.com", "to": ["me@example.com"], "subject": "Q3 numbers",
        "body": "Could you send me the Q3 numbers?"}
SEND_TO_DANA = {"to": "dana@example.com", "subject": "Re: Q3 numbers", "body": "Here they are.", "in_reply_to": "m1"}
DEFAULT_CONFIG = {"system_prompt": None, "model": None, "max_turns": None, "max_turn_tokens": None,
                  "timeout_seconds": None}


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, ServerProcess]]:
    """The mock model and an email env, then the llm agent launched with the mock as its model."""
    root = tmp_path_factory.mktemp("llm-agent")
    with ExitStack() as stack:
        started = stack.enter_context(running({"model": MOCK_MODEL, "email": EMAIL_ENV}, root))
        with pytest.MonkeyPatch.context() as launch_env:
            # What a launcher does: the model endpoint travels in the agent process's environment.
            launch_env.setenv("OPENAI_BASE_URL", started["model"].base_url + "/v1")
            launch_env.setenv("AGENTENV_MODEL", LAUNCHED_MODEL)
            launch_env.delenv("OPENAI_API_KEY", raising=False)
            started |= stack.enter_context(running({"llm": LLM}, root))
        yield started


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10.0) as client:
        yield client


@pytest.fixture
async def agent(servers: dict[str, ServerProcess], http: httpx.AsyncClient) -> AsyncIterator[A2AClient]:
    """The llm agent with the email env's tools, default configuration and a fresh mock model."""
    (await http.post(servers["model"].base_url + "/mock/reset")).raise_for_status()
    client = A2AClient(servers["llm"].base_url, http=http)
    extensions = await AgentEnvExtensions.of(client)
    await extensions.add_mcp_server(servers["email"].base_url + "/mcp", name="email")
    yield client
    (await http.post(servers["llm"].base_url + "/ext/agent-config", json=DEFAULT_CONFIG)).raise_for_status()


@pytest.fixture
async def email(servers: dict[str, ServerProcess], http: httpx.AsyncClient) -> EnvClient:
    """The email env with Dana's message in the inbox and nothing sent."""
    env = EnvClient(servers["email"].base_url, http)
    await env.data_reset()
    await env.data_add([{"kind": "data", "data": {"emails": [DANA]}}])
    return env


async def _model_requests(servers: dict[str, ServerProcess], http: httpx.AsyncClient) -> list[dict[str, Any]]:
    answer = (await http.get(servers["model"].base_url + "/mock/requests")).json()
    return [request["body"] for request in answer["requests"]]


async def _script(servers: dict[str, ServerProcess], http: httpx.AsyncClient, *replies: Any) -> None:
    (await http.post(servers["model"].base_url + "/mock/script", json={"replies": list(replies)})).raise_for_status()


async def test_a_call_line_makes_the_agent_send_the_email_and_report_one_tool_call(
        servers: dict[str, ServerProcess], agent: A2AClient, email: EnvClient, http: httpx.AsyncClient):
    reply = await agent.send(f"Reply to Dana.\nCALL send {json.dumps(SEND_TO_DANA)}", **FAST)

    sent = (await email.export_state())["sent"]
    assert [(m["to"], m["subject"], m["in_reply_to"]) for m in sent] == [(["dana@example.com"], "Re: Q3 numbers", "m1")]
    assert reply.state == "completed" and reply.error is None
    assert reply.tool_call_count == 1
    assert reply.text.startswith('mock reply: received "Reply to Dana.')
    assert "tool results: send ->" in reply.text
    assert (reply.model, reply.is_truncated, reply.is_timeout) == ("mock", False, False)
    assert [body["model"] for body in await _model_requests(servers, http)] == [LAUNCHED_MODEL] * 2


async def test_the_trajectory_extension_returns_the_loops_events(
        servers: dict[str, ServerProcess], agent: A2AClient, email: EnvClient):
    reply = await agent.send(f"CALL send {json.dumps(SEND_TO_DANA)}", **FAST)

    trajectory = await (await AgentEnvExtensions.of(agent)).get_trajectory(task_id=reply.task_id)

    kinds = [event["kind"] for event in trajectory.events]
    assert kinds == ["message", "model", "tool_call", "tool_result", "model", "message"]
    call = trajectory.events[2]
    assert (call["server"], call["tool"], call["arguments"]) == ("email", "send", SEND_TO_DANA)
    assert trajectory.events[3]["is_error"] is False
    assert trajectory.path == reply.trajectory


async def test_a_second_prompt_in_the_same_context_continues_the_conversation(
        servers: dict[str, ServerProcess], agent: A2AClient, http: httpx.AsyncClient):
    first = await agent.send("My name is Sam.", **FAST)
    second = await agent.send("What is my name?", context_id=first.context_id, **FAST)
    elsewhere = await agent.send("What is my name?", **FAST)

    bodies = await _model_requests(servers, http)
    assert second.context_id == first.context_id and elsewhere.context_id != first.context_id
    assert [(m["role"], m["content"]) for m in bodies[1]["messages"]] == [
        ("user", "My name is Sam."), ("assistant", first.text), ("user", "What is my name?")]
    assert [m["content"] for m in bodies[2]["messages"]] == ["What is my name?"]


async def test_max_turn_tokens_cuts_the_reply_and_the_reply_says_it_is_truncated(
        servers: dict[str, ServerProcess], agent: A2AClient, http: httpx.AsyncClient):
    await (await AgentEnvExtensions.of(agent)).set_agent_config({"max_turn_tokens": 4})

    reply = await agent.send("Please write me a long and detailed summary of the quarter.", **FAST)

    assert reply.state == "completed" and reply.is_truncated is True
    assert reply.text == "mock reply: rece" and reply.data["stop_reason"] == "max_turn_tokens"
    assert (await _model_requests(servers, http))[0]["max_tokens"] == 4


async def test_the_agent_config_model_and_system_prompt_win_over_the_launchers(
        servers: dict[str, ServerProcess], agent: A2AClient, http: httpx.AsyncClient):
    await (await AgentEnvExtensions.of(agent)).set_agent_config({"model": "configured-model",
                                                                 "system_prompt": "Be brief."})

    await agent.send("Hello.", **FAST)

    body = (await _model_requests(servers, http))[0]
    assert body["model"] == "configured-model"
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}


async def test_a_prompt_past_its_timeout_replies_with_what_it_did_marked_timed_out(
        servers: dict[str, ServerProcess], agent: A2AClient, http: httpx.AsyncClient):
    await (await AgentEnvExtensions.of(agent)).set_agent_config({"timeout_seconds": 0.3})
    await _script(servers, http, {"content": "too late", "delay_seconds": 5})

    reply = await agent.send("Hello.", **FAST)

    assert reply.state == "completed" and reply.is_timeout is True
    assert reply.data["stop_reason"] == "timeout" and reply.tool_call_count == 0


async def test_a_model_endpoint_error_fails_the_task_with_a_model_error(
        servers: dict[str, ServerProcess], agent: A2AClient, http: httpx.AsyncClient):
    await _script(servers, http, {"error": {"status": 400, "message": "context window exceeded"}})

    reply = await agent.send("Hello.", **FAST)

    assert reply.state == "failed"
    assert reply.error is not None and reply.error.type == "model_error"
    assert "context window exceeded" in reply.error.message


async def test_the_card_declares_the_config_fields_the_agent_honours(agent: A2AClient):
    extensions = await AgentEnvExtensions.of(agent)

    kept, dropped = extensions.filter_agent_config({"max_turns": 3, "max_turn_tokens": 10, "model": "m",
                                                    "system_prompt": "s", "timeout_seconds": 5, "plan": {}})

    assert sorted(kept) == ["max_turn_tokens", "max_turns", "model", "system_prompt", "timeout_seconds"]
    assert dropped == ["plan"]


async def test_an_mcp_server_that_cannot_be_reached_fails_the_task_with_a_tool_error(
        servers: dict[str, ServerProcess], agent: A2AClient):
    closed_port = free_port()
    # Same name: replaces the email env for this test; the fixture gives it back to the next one.
    await (await AgentEnvExtensions.of(agent)).add_mcp_server(f"http://127.0.0.1:{closed_port}/mcp", name="email")

    reply = await agent.send("Hello.", **FAST)

    assert reply.state == "failed"
    assert reply.error is not None and reply.error.type == "tool_error"


async def test_per_server_headers_go_to_their_own_server_only(tmp_path: Path):
    state = AgentState(config_fields=(), workdir=tmp_path, root=tmp_path)
    state.add_mcp_server(McpServerConfig(url="http://127.0.0.1:1/mcp", name="crm", headers={"X-Token": "s3cret"}))
    state.add_mcp_server(McpServerConfig(url="http://127.0.0.1:2/mcp", name="email"))
    seen: dict[str, str | None] = {}

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen[str(request.url)] = request.headers.get("X-Token")
        return httpx2.Response(200)

    async with httpx2.AsyncClient(transport=httpx2.MockTransport(answer), auth=ServerHeaders(state)) as client:
        await client.post("http://127.0.0.1:1/mcp")
        await client.post("http://127.0.0.1:2/mcp")

    assert seen == {"http://127.0.0.1:1/mcp": "s3cret", "http://127.0.0.1:2/mcp": None}
