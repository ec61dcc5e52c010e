"""The tool loop against real servers on loopback: the mock model and the email reference env."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from typing import Any, cast

import httpx
import pytest

from prefect_agentenv.agents.llm.loop import Toolbox, ToolCallEvent, ToolResultEvent, run_tool_loop
from prefect_agentenv.protocols.env import DataPart, EnvClient
from prefect_agentenv.protocols.mcp import McpClient, ToolInfo
from prefect_agentenv.protocols.openai import ChatMessage, OpenAIClient
from servers import ENV_CARD, Server, free_port, mock_model, python_server, running

DANA = {"id": "m1", "from": "dana@example.com", "to": ["me@example.com"], "subject": "Q3 numbers",
        "body": "Could you send me the Q3 numbers before Friday?", "date": "2026-03-02T09:00:00Z"}
SEND_TO_DANA = 'CALL send {"to": "dana@example.com", "subject": "Re: Q3 numbers", "body": "Attached.", ' \
               '"in_reply_to": "m1"}'


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Server]]:
    """The mock model and the email env, started together (each takes ~1 s to import)."""
    logs = tmp_path_factory.mktemp("llm-loop")
    email = Server(python_server("-m", "prefect_agentenv.envs.email"), ready=ENV_CARD, log=logs / "email.log",
                   name="the email env")
    with running({"model": mock_model(logs / "model.log"), "email": email}) as started:
        yield started


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=5.0) as client:
        yield client


@pytest.fixture
async def control(servers: dict[str, Server], http: httpx.AsyncClient) -> httpx.AsyncClient:
    """The mock model's control routes, with an empty script and request log."""
    (await http.post(servers["model"].base_url + "/mock/reset")).raise_for_status()
    return http


@pytest.fixture
async def model(servers: dict[str, Server], control: httpx.AsyncClient) -> AsyncIterator[OpenAIClient]:
    async with OpenAIClient(servers["model"].base_url + "/v1", timeout=10.0) as client:
        yield client


@pytest.fixture
async def email(servers: dict[str, Server], http: httpx.AsyncClient) -> EnvClient:
    """The email env with Dana's message in the inbox."""
    env = EnvClient(servers["email"].base_url, http)
    await env.data_reset()
    await env.data_add([DataPart(data={"emails": [DANA]})])
    return env


@pytest.fixture
def mcp_url(servers: dict[str, Server]) -> str:
    return servers["email"].base_url + "/mcp"


async def _script(servers: dict[str, Server], http: httpx.AsyncClient, *replies: Any) -> None:
    response = await http.post(servers["model"].base_url + "/mock/script", json={"replies": list(replies)})
    response.raise_for_status()


async def _requests(servers: dict[str, Server], http: httpx.AsyncClient) -> list[dict[str, Any]]:
    return list((await http.get(servers["model"].base_url + "/mock/requests")).json()["requests"])


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


async def test_a_call_line_makes_the_agent_send_an_email_that_the_env_then_holds(
        model: OpenAIClient, email: EnvClient, mcp_url: str) -> None:
    result = await run_tool_loop(f"Reply to Dana.\n{SEND_TO_DANA}", model_client=model, model="any",
                                 mcp_servers=[("email", mcp_url)], system_prompt="You handle email.")

    assert [event.kind for event in result.trajectory] == ["model", "tool_call", "tool_result", "model"]
    assert result.tool_call_count == 1
    assert (result.stop_reason, result.is_truncated, result.is_timeout, result.error) == ("completed", False,
                                                                                         False, None)
    assert result.model == "mock"
    assert result.text.startswith('mock reply: received "Reply to Dana.')
    assert "tool results: send ->" in result.text
    sent = (await email.export_state())["sent"]
    assert [(m["to"], m["in_reply_to"]) for m in sent] == [(["dana@example.com"], "m1")]


async def test_a_scripted_plan_searches_reads_and_answers_with_what_the_tools_returned(
        model: OpenAIClient, email: EnvClient, mcp_url: str, servers: dict[str, Server],
        control: httpx.AsyncClient) -> None:
    await _script(servers, control, _call("email_search", query="Q3"), _call("email_read", id="m1"),
                  "Dana wants the Q3 numbers before Friday.")

    result = await run_tool_loop("What does Dana want?", model_client=model, model="any",
                                 mcp_servers=[("email", mcp_url)])

    results = [e for e in result.trajectory if isinstance(e, ToolResultEvent)]
    assert [r.name for r in results] == ["email_search", "email_read"]
    assert not any(r.is_error for r in results)
    assert results[1].structured is not None and results[1].structured["subject"] == "Q3 numbers"
    assert result.text == "Dana wants the Q3 numbers before Friday."
    assert result.tool_call_count == 2
    assert (await email.export_state())["emails"][0]["read"] is True
    requests = await _requests(servers, control)
    offered = [tool["function"]["name"] for tool in requests[0]["body"]["tools"]]
    assert offered == ["email_search", "email_read", "send", "list_sent", "list_folders"]
    assert requests[2]["body"]["messages"][-1]["role"] == "tool"


async def test_tools_offered_by_two_servers_under_one_name_are_prefixed_by_server(
        model: OpenAIClient, email: EnvClient, mcp_url: str, servers: dict[str, Server],
        control: httpx.AsyncClient) -> None:
    await _script(servers, control, _call("archive__list_folders"), "done")

    result = await run_tool_loop("Folders?", model_client=model, model="any",
                                 mcp_servers=[("inbox", mcp_url), ("archive", mcp_url)])

    offered = [tool["function"]["name"] for tool in (await _requests(servers, control))[0]["body"]["tools"]]
    assert "inbox__send" in offered and "archive__send" in offered and "send" not in offered
    [call] = [e for e in result.trajectory if isinstance(e, ToolCallEvent)]
    assert (call.server, call.tool) == ("archive", "list_folders")
    assert result.text == "done"


async def test_max_turns_stops_a_model_that_keeps_calling_tools_and_marks_the_run_truncated(
        model: OpenAIClient, email: EnvClient, mcp_url: str, servers: dict[str, Server],
        control: httpx.AsyncClient) -> None:
    await _script(servers, control, *[_call("list_folders") for _ in range(3)])

    result = await run_tool_loop("Keep looking.", model_client=model, model="any",
                                 mcp_servers=[("email", mcp_url)], max_turns=2)

    assert (result.stop_reason, result.is_truncated) == ("max_turns", True)
    assert result.tool_call_count == 2
    assert len(await _requests(servers, control)) == 2


async def test_a_response_cut_off_by_max_turn_tokens_ends_the_run_before_its_tool_calls_run(
        model: OpenAIClient, email: EnvClient, mcp_url: str, servers: dict[str, Server],
        control: httpx.AsyncClient) -> None:
    await _script(servers, control, {**_call("send", to="dana@example.com", subject="Q3", body="Attac"),
                                     "finish_reason": "length"})

    result = await run_tool_loop("Reply to Dana.", model_client=model, model="any",
                                 mcp_servers=[("email", mcp_url)], max_turn_tokens=16)

    assert (result.stop_reason, result.is_truncated) == ("max_turn_tokens", True)
    assert result.tool_call_count == 0
    assert (await email.export_state())["sent"] == []
    [request] = await _requests(servers, control)
    assert request["body"]["max_tokens"] == 16


async def test_a_long_unscripted_reply_hits_max_turn_tokens_and_is_truncated(
        model: OpenAIClient, email: EnvClient, mcp_url: str) -> None:
    result = await run_tool_loop("tell me everything " * 20, model_client=model, model="any", max_turn_tokens=8)

    assert (result.stop_reason, result.is_truncated) == ("max_turn_tokens", True)
    assert result.text == 'mock reply: received "tell me everything'[:32]


async def test_a_model_that_hits_its_own_length_limit_truncates_the_run_without_a_cap(
        model: OpenAIClient, servers: dict[str, Server], control: httpx.AsyncClient) -> None:
    await _script(servers, control, {"content": "The numbers are", "finish_reason": "length"})

    result = await run_tool_loop("Numbers?", model_client=model, model="any")

    assert (result.stop_reason, result.is_truncated, result.text) == ("length", True, "The numbers are")


async def test_a_loop_past_its_timeout_returns_what_it_did_so_far(
        model: OpenAIClient, email: EnvClient, mcp_url: str, servers: dict[str, Server],
        control: httpx.AsyncClient) -> None:
    await _script(servers, control, _call("list_folders"), {"content": "too late", "delay_seconds": 1.5})

    started = time.monotonic()
    result = await run_tool_loop("Folders?", model_client=model, model="any",
                                 mcp_servers=[("email", mcp_url)], timeout=0.8)

    assert time.monotonic() - started < 1.4
    assert (result.stop_reason, result.is_timeout, result.is_truncated) == ("timeout", True, False)
    assert result.tool_call_count == 1
    assert [event.kind for event in result.trajectory] == ["model", "tool_call", "tool_result"]


async def test_an_unknown_tool_and_unreadable_arguments_go_back_to_the_model_as_tool_errors(
        model: OpenAIClient, email: EnvClient, mcp_url: str, servers: dict[str, Server],
        control: httpx.AsyncClient) -> None:
    await _script(servers, control,
                  {"tool_calls": [{"name": "delete_all"}, {"name": "send", "arguments": '{"to": "dana@'}]},
                  "I could not do it.")

    result = await run_tool_loop("Clean up.", model_client=model, model="any", mcp_servers=[("email", mcp_url)])

    results = [e for e in result.trajectory if isinstance(e, ToolResultEvent)]
    assert [r.is_error for r in results] == [True, True]
    assert "no tool named 'delete_all'" in results[0].content
    assert "not a JSON object" in results[1].content
    calls = [e for e in result.trajectory if isinstance(e, ToolCallEvent)]
    assert calls[1].arguments == '{"to": "dana@'
    last_request = (await _requests(servers, control))[-1]["body"]["messages"]
    assert [m["content"].startswith("tool error:") for m in last_request if m["role"] == "tool"] == [True, True]
    assert result.text == "I could not do it."
    assert (await email.export_state())["sent"] == []


async def test_a_failing_tool_is_reported_to_the_model_and_the_loop_goes_on(
        model: OpenAIClient, email: EnvClient, mcp_url: str, servers: dict[str, Server],
        control: httpx.AsyncClient) -> None:
    await _script(servers, control, _call("email_read", id="nope"), "No such email.")

    result = await run_tool_loop("Read nope.", model_client=model, model="any", mcp_servers=[("email", mcp_url)])

    [tool_result] = [e for e in result.trajectory if isinstance(e, ToolResultEvent)]
    assert tool_result.is_error and "nope" in tool_result.content
    assert (result.stop_reason, result.error, result.text) == ("completed", None, "No such email.")


async def test_a_model_endpoint_error_ends_the_loop_with_the_error_recorded(
        model: OpenAIClient, servers: dict[str, Server], control: httpx.AsyncClient) -> None:
    await _script(servers, control, {"error": {"status": 400, "message": "model not found"}})

    result = await run_tool_loop("Hello", model_client=model, model="nonexistent")

    assert (result.stop_reason, result.error_type) == ("error", "ProtocolError")
    assert result.error is not None and "model not found" in result.error
    assert result.model == "nonexistent"


async def test_an_mcp_server_that_cannot_be_reached_is_reported_not_raised(model: OpenAIClient) -> None:
    result = await run_tool_loop("Hello", model_client=model, model="any",
                                 mcp_servers=[("gone", f"http://127.0.0.1:{free_port()}/mcp")], timeout=10)

    assert (result.stop_reason, result.error_type) == ("error", "McpError")
    assert result.trajectory == []


async def test_history_continues_a_conversation_with_one_system_prompt(
        model: OpenAIClient, servers: dict[str, Server], control: httpx.AsyncClient) -> None:
    first = await run_tool_loop("My name is Sam.", model_client=model, model="any", system_prompt="Be kind.")

    second = await run_tool_loop("What is my name?", model_client=model, model="any", system_prompt="Be kind.",
                                 history=first.messages)

    sent = (await _requests(servers, control))[-1]["body"]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert [m.role for m in second.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert second.messages[0] == ChatMessage.system("Be kind.")


def test_tool_names_are_made_valid_and_unique_for_the_model() -> None:
    session = cast(McpClient, object())
    toolbox = Toolbox()

    toolbox.add_all([("crm v2", session, [ToolInfo(name="records.get"), ToolInfo(name="send")]),
                     ("mail", session, [ToolInfo(name="send"), ToolInfo(name="x" * 80)]),
                     ("mail", session, [ToolInfo(name="send")])])

    names = [spec.name for spec in toolbox.specs]
    assert names == ["records_get", "crm_v2__send", "mail__send", "x" * 64, "mail__send_2"]
    assert toolbox.route("records_get") == ("crm v2", session, "records.get")
    assert toolbox.route("mail__send_2") == ("mail", session, "send")
