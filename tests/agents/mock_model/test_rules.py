"""The mock model as a real server on loopback, driven through the OpenAI-compatible client."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from prefect_agentenv.agents.mock_model import MOCK_JUDGE_JUSTIFICATION, USER_SIMULATOR_MARKER, default_answer
from prefect_agentenv.exceptions import ProtocolError
from prefect_agentenv.grading.judge import JudgeCriterion, build_judge_prompt, parse_judge_output
from prefect_agentenv.protocols.openai import ChatMessage, OpenAIClient, ToolSpec
from servers import Server, free_port, mock_model

SEND = ToolSpec(name="send", description="Send an email.",
                parameters={"type": "object", "properties": {"to": {"type": "string"}}})
SEARCH = ToolSpec(name="email_search", description="Search the mailbox.")


@pytest.fixture(scope="module")
def mock_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with mock_model(tmp_path_factory.mktemp("mock-model") / "mock.log") as server:
        yield server


@pytest.fixture
async def control(mock_server: Server) -> AsyncIterator[httpx.AsyncClient]:
    """A client for the ``/mock`` routes; the script and the log start empty."""
    async with httpx.AsyncClient(base_url=mock_server.base_url, timeout=5.0) as http:
        (await http.post("/mock/reset")).raise_for_status()
        yield http


@pytest.fixture
async def client(mock_server: Server, control: httpx.AsyncClient) -> AsyncIterator[OpenAIClient]:
    async with OpenAIClient(mock_server.url("/v1"), api_key="sk-test-not-a-secret", timeout=5.0) as model:
        yield model


async def _script(control: httpx.AsyncClient, *replies: Any) -> None:
    (await control.post("/mock/script", json={"replies": list(replies)})).raise_for_status()


async def _requests(control: httpx.AsyncClient) -> list[dict[str, Any]]:
    return list((await control.get("/mock/requests")).json()["requests"])


async def test_every_answer_names_the_mock_model_whatever_model_was_asked_for(client: OpenAIClient) -> None:
    completion = await client.chat([ChatMessage.user("hello")], model="gpt-4.1")

    assert completion.model == "mock"
    assert completion.finish_reason == "stop"
    assert completion.usage.completion_tokens > 0


async def test_without_anything_to_act_on_the_mock_echoes_the_last_user_message(client: OpenAIClient) -> None:
    completion = await client.chat([ChatMessage.system("Be brief."), ChatMessage.user("What  is\nthe plan?")],
                                   model="any")

    assert completion.message.content == 'mock reply: received "What is the plan?"'


async def test_scripted_replies_come_back_in_order_and_then_the_rules_resume(
        client: OpenAIClient, control: httpx.AsyncClient) -> None:
    await _script(control, "first", {"content": "second"})

    answers = [(await client.chat([ChatMessage.user("hi")], model="m")).message.content for _ in range(3)]

    assert answers == ["first", "second", 'mock reply: received "hi"']


async def test_a_scripted_tool_call_reaches_the_client_with_its_arguments(
        client: OpenAIClient, control: httpx.AsyncClient) -> None:
    await _script(control, {"tool_calls": [{"name": "send", "arguments": {"to": "dana@example.com"}}]})

    completion = await client.chat([ChatMessage.user("write to Dana")], model="m", tools=[SEND])

    assert completion.finish_reason == "tool_calls"
    [call] = completion.message.tool_calls
    assert call.name == "send" and call.id == "call_0_0"
    assert call.parsed_arguments() == {"to": "dana@example.com"}


async def test_a_call_line_becomes_a_tool_call_once_and_then_the_mock_echoes_the_tool_result(
        client: OpenAIClient) -> None:
    messages = [ChatMessage.user('Reply to Dana.\nCALL send {"to": "dana@example.com"}')]

    first = await client.chat(messages, model="m", tools=[SEND, SEARCH])
    [call] = first.message.tool_calls
    messages += [first.message, ChatMessage.tool(call.id, '{"status": "sent"}')]
    second = await client.chat(messages, model="m", tools=[SEND, SEARCH])

    assert (call.name, call.parsed_arguments()) == ("send", {"to": "dana@example.com"})
    assert second.message.tool_calls == []
    assert second.message.content is not None
    assert second.message.content.endswith('tool results: send -> {"status": "sent"}')


async def test_call_lines_are_answered_in_order_one_per_completion(client: OpenAIClient) -> None:
    messages = [ChatMessage.user('CALL email_search {"query": "Q3"}\nCALL send {"to": "dana@example.com"}')]
    names = []
    for _ in range(3):
        completion = await client.chat(messages, model="m", tools=[SEND, SEARCH])
        messages.append(completion.message)
        for call in completion.message.tool_calls:
            names.append(call.name)
            messages.append(ChatMessage.tool(call.id, "ok"))

    assert names == ["email_search", "send"]
    assert messages[-1].content is not None and messages[-1].content.startswith("mock reply:")


async def test_a_call_line_for_a_tool_that_is_not_offered_gets_an_explanation(client: OpenAIClient) -> None:
    completion = await client.chat([ChatMessage.user("CALL delete_everything {}")], model="m", tools=[SEND])

    assert completion.message.tool_calls == []
    assert completion.message.content == "mock reply: cannot CALL 'delete_everything': the offered tools are send"


async def test_a_call_line_matches_a_tool_exposed_under_its_server_prefix() -> None:
    body = {"messages": [{"role": "user", "content": "CALL send {}"}],
            "tools": [ToolSpec(name="inbox__send").to_wire(), ToolSpec(name="inbox__list_sent").to_wire()]}

    answer = default_answer(body)

    assert [call.name for call in answer.tool_calls] == ["inbox__send"]


def test_under_codex_s_code_mode_a_call_line_becomes_a_script_calling_the_nested_tool() -> None:
    """Codex's code mode offers one custom ``exec`` tool; an MCP server's tools are nested in it, named
    ``mcp__<server>__<tool>``, and may be left out of its description (they are in ``ALL_TOOLS``)."""
    from prefect_agentenv.agents.mock_model.responses import read_request as read_responses

    body = {"input": [{"role": "user", "content": 'Stamp it.\nCALL stamp {"word": "harbor"}'}],
            "tools": [{"type": "custom", "name": "exec", "description": "Run JavaScript"}]}

    (call,) = default_answer(read_responses(body)).tool_calls

    assert call.name == "exec" and isinstance(call.arguments, str)
    assert 'const wanted = "stamp"; const args = {"word": "harbor"};' in call.arguments
    assert "t.name.endsWith('__' + wanted)" in call.arguments and "await tools[found[0].name](args)" in call.arguments


@pytest.mark.parametrize("output_format", ["rubric_binary", "rubric_partial"])
async def test_a_judge_prompt_is_answered_with_a_labelled_passing_grade_that_parses(
        client: OpenAIClient, output_format: Any) -> None:
    criteria = [JudgeCriterion(id="polite", criterion="The email is polite."),
                JudgeCriterion(id="explains", criterion="It explains the Q3 numbers.")]
    messages, id_map = build_judge_prompt("Reply to Dana.", "CALL send {}\nSent.", None, criteria,
                                          output_format=output_format)

    completion = await client.chat(messages, model="judge", tools=[SEND])
    rows = parse_judge_output(completion.message.content or "", id_map, output_format)

    assert completion.message.tool_calls == []
    assert [(r.id, r.result, r.score) for r in rows] == [("polite", "pass", 1.0), ("explains", "pass", 1.0)]
    assert all(r.justification == MOCK_JUDGE_JUSTIFICATION for r in rows)


def test_a_judge_prompt_sent_as_one_user_message_is_still_graded() -> None:
    messages, id_map = build_judge_prompt("Reply to Dana.", "Sent.", None,
                                          [JudgeCriterion(id="polite", criterion="Polite.")])
    flattened = "\n\n".join(m.content or "" for m in messages)

    answer = default_answer({"messages": [{"role": "user", "content": flattened}]})

    assert answer.rule == "judge"
    assert [r.result for r in parse_judge_output(answer.content or "", id_map)] == ["pass"]


def test_a_judge_scripted_in_its_instructions_fails_the_criteria_named_but_the_graded_reply_cannot_script_it() -> None:
    criteria = [JudgeCriterion(id="polite", criterion="Polite."), JudgeCriterion(id="explains", criterion="Explains.")]
    messages, id_map = build_judge_prompt("Reply to Dana.", "Sent. [mock-judge: fail c1]", None, criteria,
                                          grading_policy="[mock-judge: fail c2]")
    scripted = default_answer({"messages": [m.model_dump() for m in messages]})
    assert [r.result for r in parse_judge_output(scripted.content or "", id_map)] == ["pass", "fail"]

    messages, _ = build_judge_prompt("Reply to Dana.", "[mock-judge: unreadable]", None, criteria)
    honest = default_answer({"messages": [m.model_dump() for m in messages]})
    assert [r.result for r in parse_judge_output(honest.content or "", id_map)] == ["pass", "pass"]

    messages, _ = build_judge_prompt("Reply to Dana.", "Sent.", None, criteria, grading_policy="[mock-judge: unreadable]")
    unreadable = default_answer({"messages": [m.model_dump() for m in messages]})
    assert unreadable.rule == "judge" and "{" not in (unreadable.content or "")


async def test_a_user_simulator_prompt_ends_the_conversation(client: OpenAIClient) -> None:
    messages = [ChatMessage.system(f"{USER_SIMULATOR_MARKER} You are Dana, a busy CFO."),
                ChatMessage.user("I sent the numbers. Anything else?")]

    completion = await client.chat(messages, model="user")

    assert json.loads(completion.message.content or "") == {"message": "Thanks, that is all.", "done": True}


async def test_a_scripted_length_finish_marks_the_completion_truncated(
        client: OpenAIClient, control: httpx.AsyncClient) -> None:
    await _script(control, {"content": "The numbers are", "finish_reason": "length"})

    completion = await client.chat([ChatMessage.user("numbers?")], model="m")

    assert completion.is_truncated
    assert completion.message.content == "The numbers are"


async def test_max_tokens_cuts_a_long_reply_and_finishes_with_length(client: OpenAIClient) -> None:
    completion = await client.chat([ChatMessage.user("word " * 100)], model="m", max_tokens=5)

    assert completion.is_truncated
    assert completion.message.content == "mock reply: received "[:20]
    assert completion.usage.completion_tokens == 5


async def test_the_request_log_keeps_every_request_but_never_the_api_key(
        client: OpenAIClient, control: httpx.AsyncClient) -> None:
    await client.chat([ChatMessage.user("one")], model="m1", max_tokens=50, temperature=0.0)
    await client.chat([ChatMessage.user("two")], model="m2", tools=[SEND])

    log = await _requests(control)

    assert [r["body"]["model"] for r in log] == ["m1", "m2"]
    assert log[0]["body"]["max_tokens"] == 50 and log[0]["body"]["temperature"] == 0.0
    assert log[1]["body"]["tools"][0]["function"]["name"] == "send"
    assert all(r["has_authorization"] and r["path"] == "/v1/chat/completions" for r in log)
    assert "sk-test-not-a-secret" not in json.dumps(log)


async def test_reset_empties_the_script_and_the_request_log(
        client: OpenAIClient, control: httpx.AsyncClient) -> None:
    await _script(control, "queued")
    await client.chat([ChatMessage.user("x")], model="m")
    await _script(control, "left over")

    await control.post("/mock/reset")

    assert (await control.get("/mock/requests")).json() == {"requests": [], "queued": 0}


async def test_a_malformed_script_is_refused(control: httpx.AsyncClient) -> None:
    response = await control.post("/mock/script", json={"replies": [{"content": "x", "colour": "red"}]})

    assert response.status_code == 400
    assert (await control.get("/mock/requests")).json()["queued"] == 0


async def test_a_scripted_error_becomes_a_protocol_error_with_the_status_and_the_message(
        mock_server: Server, control: httpx.AsyncClient) -> None:
    await _script(control, {"error": {"status": 400, "message": "context too long"}})

    async with OpenAIClient(mock_server.url("/v1"), timeout=5.0) as model:
        with pytest.raises(ProtocolError, match="context too long") as caught:
            await model.chat([ChatMessage.user("x")], model="m")

    assert caught.value.code == 400
    assert caught.value.url == mock_server.url("/v1") + "/chat/completions"


async def test_an_overloaded_endpoint_is_retried_before_the_answer_is_taken(
        mock_server: Server, control: httpx.AsyncClient) -> None:
    await _script(control, {"error": {"status": 503, "message": "overloaded"}}, "after the retry")

    async with OpenAIClient(mock_server.url("/v1"), timeout=5.0, max_retries=1) as model:
        completion = await model.chat([ChatMessage.user("x")], model="m")

    assert completion.message.content == "after the retry"
    assert len(await _requests(control)) == 2


async def test_an_error_body_that_echoes_the_api_key_is_scrubbed(
        mock_server: Server, control: httpx.AsyncClient) -> None:
    await _script(control, {"error": {"status": 401, "message": "Incorrect API key provided: sk-live-abc123"}})

    async with OpenAIClient(mock_server.url("/v1"), api_key="sk-live-abc123", timeout=5.0) as model:
        with pytest.raises(ProtocolError) as caught:
            await model.chat([ChatMessage.user("x")], model="m")

    assert caught.value.code == 401
    assert "sk-live-abc123" not in str(caught.value)
    assert "sk-live-abc123" not in repr(model)


async def test_an_answer_slower_than_the_client_timeout_is_a_protocol_error(
        mock_server: Server, control: httpx.AsyncClient) -> None:
    await _script(control, {"content": "late", "delay_seconds": 1.5})

    async with OpenAIClient(mock_server.url("/v1"), timeout=0.3) as model:
        with pytest.raises(ProtocolError, match="did not answer in time"):
            await model.chat([ChatMessage.user("x")], model="m")


async def test_an_endpoint_nobody_listens_on_is_a_protocol_error() -> None:
    async with OpenAIClient(f"http://127.0.0.1:{free_port()}/v1", timeout=2.0, max_retries=0) as model:
        with pytest.raises(ProtocolError, match="could not reach"):
            await model.chat([ChatMessage.user("x")], model="m")


async def test_a_run_serves_its_own_mock_model_in_process_and_stopping_it_frees_the_port() -> None:
    """What a run starts when no model is configured: the same API from this event loop, one
    server (script queue, request log) per run, gone once stopped."""
    from prefect_agentenv.agents.mock_model.in_process import serve_mock_model

    first, second = await serve_mock_model(), await serve_mock_model()
    try:
        assert first.base_url != second.base_url
        async with httpx.AsyncClient(timeout=5.0) as http:
            assert (await http.get(first.base_url + "/health")).json() == {"status": "ok", "model": "mock"}
            (await http.post(first.base_url + "/mock/script", json={"replies": ["scripted for the first run"]})
             ).raise_for_status()
        async with OpenAIClient(second.base_url + "/v1", timeout=5.0) as model:
            other = (await model.chat([ChatMessage.user("hello")], model="m")).message.content
        async with OpenAIClient(first.base_url + "/v1", timeout=5.0) as model:
            mine = (await model.chat([ChatMessage.user("hello")], model="m")).message.content
        assert (mine, other) == ("scripted for the first run", 'mock reply: received "hello"')
    finally:
        await first.stop()
        await second.stop()
    async with httpx.AsyncClient(timeout=2.0) as http:
        with pytest.raises(httpx.ConnectError):
            await http.get(first.base_url + "/health")


async def test_a_stop_lets_an_answer_in_flight_finish_and_then_frees_the_port() -> None:
    """A request already being answered when the run stops its mock model is still answered."""
    from prefect_agentenv.agents.mock_model.in_process import serve_mock_model

    served = await serve_mock_model()
    async with httpx.AsyncClient(timeout=5.0) as http:
        (await http.post(served.base_url + "/mock/script",
                         json={"replies": [{"content": "slow but whole", "delay_seconds": 0.3}]})).raise_for_status()
        async with OpenAIClient(served.base_url + "/v1", timeout=5.0) as model:
            asking = asyncio.ensure_future(model.chat([ChatMessage.user("hello")], model="m"))
            while not (await http.get(served.base_url + "/mock/requests")).json():
                await asyncio.sleep(0.01)  # the chat request has arrived and is being held
            await served.stop()
            assert (await asking).message.content == "slow but whole"
        with pytest.raises(httpx.ConnectError):
            await http.get(served.base_url + "/health")
