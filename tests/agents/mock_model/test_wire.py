"""The mock model on the wires coding-agent harnesses speak, driven by the genuine SDKs.

Chat completions (OpenCode, pi, OpenHands), the Responses API (Codex, direct and code mode) and
Anthropic Messages (Claude Code), streamed and not: the smoke prompt gets the offered shell
tool called with its command, the tool's result gets the output back, and scripted replies come
out in each API's shape. The requests are shaped as those harnesses send them.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest

from servers import Server, mock_model

PROMPT = "Run the shell command `echo $((6 * 7))` and reply with only the number it prints."
COMMAND = "echo $((6 * 7))"


def _schema(*required: str, **properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required)}


def _chat_tool(name: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": f"The {name} tool.", "parameters": parameters}}


STRING = {"type": "string"}
OPENCODE_TOOLS = [_chat_tool("read", _schema("filePath", filePath=STRING)),
                  _chat_tool("bash", _schema("command", "description", command=STRING, description=STRING,
                                             timeout={"type": "number"})),
                  _chat_tool("edit", _schema("filePath", filePath=STRING)),
                  _chat_tool("peer_agents_list", _schema())]


@pytest.fixture(scope="module")
def mock_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with mock_model(tmp_path_factory.mktemp("mock-wire") / "mock.log") as server:
        yield server


@pytest.fixture
async def control(mock_server: Server) -> AsyncIterator[httpx.AsyncClient]:
    """A client for the ``/mock`` routes; the script and the log start empty."""
    async with httpx.AsyncClient(base_url=mock_server.base_url, timeout=10.0) as http:
        (await http.post("/mock/reset")).raise_for_status()
        yield http


@pytest.fixture
async def oai(mock_server: Server, control: httpx.AsyncClient) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(base_url=mock_server.url("/v1"), api_key="sk-test", max_retries=0) as client:
        yield client


@pytest.fixture
async def claude(mock_server: Server, control: httpx.AsyncClient) -> AsyncIterator[anthropic.AsyncAnthropic]:
    async with anthropic.AsyncAnthropic(base_url=mock_server.base_url, api_key="sk-test", max_retries=0) as client:
        yield client


async def _script(control: httpx.AsyncClient, *replies: Any) -> None:
    (await control.post("/mock/script", json={"replies": list(replies)})).raise_for_status()


async def _events(mock_server: Server, path: str, body: dict[str, Any]) -> list[tuple[str | None, str]]:
    """The raw server-sent events of one streamed request: (event name, data) pairs, in order."""
    events: list[tuple[str | None, str]] = []
    name: str | None = None
    async with httpx.AsyncClient(timeout=10.0) as http, \
            http.stream("POST", mock_server.url(path), json=body) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                events.append((name, line.removeprefix("data: ")))
                name = None
    return events


# Chat completions


async def test_opencodes_streamed_request_gets_its_bash_tool_called_with_the_prompts_command(
        oai: openai.AsyncOpenAI) -> None:
    messages: Any = [{"role": "system", "content": "You are opencode."}, {"role": "user", "content": PROMPT}]

    async with oai.chat.completions.stream(model="litellm/anything", messages=messages, tools=OPENCODE_TOOLS,
                                           stream_options={"include_usage": True}) as stream:
        final = await stream.get_final_completion()

    [choice] = final.choices
    [call] = choice.message.tool_calls or []
    assert (call.function.name, json.loads(call.function.arguments)) == ("bash", {"command": COMMAND, "description": ""})
    assert choice.finish_reason == "tool_calls" and final.model == "mock"
    assert final.system_fingerprint == "mock:shell"
    assert final.usage is not None and final.usage.prompt_tokens > 0 and final.usage.completion_tokens > 0


async def test_the_tool_result_streams_back_as_the_commands_output_then_usage_then_done(mock_server: Server) -> None:
    call = {"id": "call_0_0", "type": "function", "function": {"name": "bash", "arguments": json.dumps({"command": COMMAND})}}
    body = {"model": "m", "stream": True, "stream_options": {"include_usage": True}, "tools": OPENCODE_TOOLS,
            "messages": [{"role": "system", "content": "You are opencode."}, {"role": "user", "content": PROMPT},
                         {"role": "assistant", "content": "", "tool_calls": [call]},
                         {"role": "tool", "tool_call_id": "call_0_0", "content": "42\n"}]}

    events = await _events(mock_server, "/v1/chat/completions", body)

    assert all(name is None for name, _ in events) and events[-1][1] == "[DONE]"
    chunks = [json.loads(data) for _, data in events[:-1]]
    assert {chunk["object"] for chunk in chunks} == {"chat.completion.chunk"}
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]) == "42"
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "stop"
    *_, usage = chunks
    assert usage["choices"] == [] and usage["usage"]["completion_tokens"] == 1
    assert all(c["usage"] is None for c in chunks[:-1])


async def test_a_stream_without_include_usage_sends_no_usage_chunk(mock_server: Server) -> None:
    events = await _events(mock_server, "/v1/chat/completions",
                           {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]})

    chunks = [json.loads(data) for _, data in events[:-1]]
    assert all(chunk["choices"] and "usage" not in chunk for chunk in chunks)


async def test_opencodes_title_request_without_tools_gets_plain_text(oai: openai.AsyncOpenAI) -> None:
    messages: Any = [{"role": "system", "content": "You are a title generator."},
                     {"role": "user", "content": "Generate a title for this conversation:\n"},
                     {"role": "user", "content": f'"{PROMPT}"'}]

    stream = await oai.chat.completions.create(model="m", messages=messages, stream=True, max_tokens=32000,
                                               stream_options={"include_usage": True})
    chunks = [chunk async for chunk in stream]

    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.startswith('mock reply: received "') and "echo $((6 * 7))" in text
    assert not any(c.choices[0].delta.tool_calls for c in chunks if c.choices)
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"


async def test_pis_parts_and_tool_result_on_the_bare_chat_path_come_back_as_the_output(
        mock_server: Server, control: httpx.AsyncClient) -> None:
    tools: Any = [_chat_tool(name, _schema("command", command=STRING) if name == "bash" else _schema())
                  for name in ("read", "bash", "edit", "write")]
    messages: Any = [{"role": "system", "content": "You are pi."},
                     {"role": "user", "content": [{"type": "text", "text": PROMPT}]}]
    async with openai.AsyncOpenAI(base_url=mock_server.base_url, api_key="k", max_retries=0) as pi:
        async with pi.chat.completions.stream(model="m", messages=messages, tools=tools) as stream:
            first = (await stream.get_final_completion()).choices[0].message
        [call] = first.tool_calls or []
        messages += [first.model_dump(exclude_none=True),
                     {"role": "tool", "tool_call_id": call.id, "content": [{"type": "text", "text": "42\n"}]}]
        async with pi.chat.completions.stream(model="m", messages=messages, tools=tools) as stream:
            second = (await stream.get_final_completion()).choices[0].message

    assert json.loads(call.function.arguments) == {"command": COMMAND}
    assert second.content == "42" and not second.tool_calls
    log = (await control.get("/mock/requests")).json()["requests"]
    assert [(r["path"], r["api"]) for r in log] == [("/chat/completions", "chat")] * 2


async def test_openhands_gets_its_terminal_tool_called_with_every_required_argument_and_then_the_output(
        mock_server: Server) -> None:
    terminal = _chat_tool("terminal", _schema("command", "security_risk", command=STRING,
                                              is_input={"type": "boolean", "default": False},
                                              security_risk={"type": "string", "enum": ["LOW", "MEDIUM", "HIGH"]}))
    tools: Any = [terminal, _chat_tool("file_editor", _schema()), _chat_tool("finish", _schema())]
    messages: Any = [{"role": "system", "content": "You are OpenHands."}, {"role": "user", "content": PROMPT}]
    async with openai.AsyncOpenAI(base_url=mock_server.base_url, api_key="k", max_retries=0) as litellm:
        first = (await litellm.chat.completions.create(model="m", messages=messages, tools=tools)).choices[0]
        [call] = first.message.tool_calls or []
        output = "42\n[Current working directory: /workspace]\n[Command finished with exit code 0]"
        messages += [first.message.model_dump(exclude_none=True),
                     {"role": "tool", "tool_call_id": call.id, "name": "terminal", "content": output}]
        second = (await litellm.chat.completions.create(model="m", messages=messages, tools=tools)).choices[0]

    assert first.finish_reason == "tool_calls"
    assert json.loads(call.function.arguments) == {"command": COMMAND, "security_risk": "LOW"}
    assert (second.message.content, second.finish_reason) == ("42", "stop")


async def test_scripted_text_and_tool_calls_stream_out_as_chat_chunks(
        oai: openai.AsyncOpenAI, control: httpx.AsyncClient) -> None:
    await _script(control, {"content": "Looking.", "tool_calls": [{"name": "read", "arguments": {"filePath": "a.py"}}]},
                  "a long scripted answer that spans several deltas")
    messages: Any = [{"role": "user", "content": "hi"}]

    async with oai.chat.completions.stream(model="m", messages=messages, tools=OPENCODE_TOOLS) as stream:
        first = await stream.get_final_completion()
    async with oai.chat.completions.stream(model="m", messages=messages) as stream:
        second = await stream.get_final_completion()

    [call] = first.choices[0].message.tool_calls or []
    assert first.choices[0].message.content == "Looking."
    assert (call.id, call.function.name, json.loads(call.function.arguments)) == ("call_0_0", "read", {"filePath": "a.py"})
    assert second.choices[0].message.content == "a long scripted answer that spans several deltas"
    assert second.system_fingerprint == "mock:script"


# The Responses API

EXEC_COMMAND = {"type": "function", "name": "exec_command", "description": "Runs a command.",
                "parameters": _schema("cmd", cmd=STRING, workdir=STRING, yield_time_ms={"type": "number"})}
CODEX_TOOLS: Any = [EXEC_COMMAND, {"type": "function", "name": "write_stdin", "parameters": _schema("session_id")},
                    {"type": "namespace", "name": "multi_agent_v1", "tools": [
                        {"type": "function", "name": "spawn_agent", "parameters": _schema()}]},
                    {"type": "web_search"}]
CODE_MODE: Any = {"type": "additional_tools", "tools": [
    {"type": "namespace", "name": "functions", "description": "", "tools": [
        {"type": "custom", "name": "exec", "description": "Run JavaScript code to orchestrate tool calls.",
         "format": {"type": "grammar", "syntax": "lark", "definition": "start: /(.|\\n)+/"}},
        {"type": "function", "name": "wait", "parameters": _schema("cell_id", cell_id=STRING)}]}]}


def _codex_input() -> list[Any]:
    """What Codex sends before the prompt: developer instructions and the environment, as a user message."""
    return [{"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are Codex."}]},
            {"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": "<environment_context>\n  <shell>bash</shell>\n"
                                                        "</environment_context>"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": PROMPT}]}]


async def _responses_stream(oai: openai.AsyncOpenAI, **request: Any) -> tuple[list[str], Any]:
    """The event types of one streamed response and the final response, as the SDK's parser sees them."""
    async with oai.responses.stream(model="gpt-5.6-sol", **request) as stream:
        types = [event.type async for event in stream]
        return types, await stream.get_final_response()


async def test_codex_gets_its_exec_command_called_and_the_function_call_output_answered(
        mock_server: Server) -> None:
    async with openai.AsyncOpenAI(base_url=mock_server.url("/openai/v1"), api_key="k", max_retries=0) as codex:
        types, first = await _responses_stream(codex, input=_codex_input(), tools=CODEX_TOOLS)
        [call] = first.output
        output = "Chunk ID: 06dc39\nWall time: 0.0000 seconds\nProcess exited with code 0\nOutput:\n42\n"
        follow_up = [*_codex_input(), {"type": "function_call", "id": call.id, "call_id": call.call_id,
                                       "name": call.name, "arguments": call.arguments},
                     {"type": "function_call_output", "call_id": call.call_id, "output": output}]
        answer_types, second = await _responses_stream(codex, input=follow_up, tools=CODEX_TOOLS)

    assert types == ["response.created", "response.in_progress", "response.output_item.added",
                     *["response.function_call_arguments.delta"] * 2, "response.function_call_arguments.done",
                     "response.output_item.done", "response.completed"]
    assert (call.type, call.name, json.loads(call.arguments)) == ("function_call", "exec_command", {"cmd": COMMAND})
    assert answer_types == ["response.created", "response.in_progress", "response.output_item.added",
                            "response.content_part.added", "response.output_text.delta", "response.output_text.done",
                            "response.content_part.done", "response.output_item.done", "response.completed"]
    assert second.output_text == "42" and second.model == "mock" and second.status == "completed"
    assert second.usage is not None and second.usage.input_tokens > 0 and second.usage.output_tokens == 1


async def test_codex_code_mode_gets_javascript_for_its_custom_exec_tool_and_the_custom_output_answered(
        oai: openai.AsyncOpenAI) -> None:
    types, first = await _responses_stream(oai, input=[CODE_MODE, *_codex_input()], tools=[])
    [call] = first.output
    result = [{"type": "input_text", "text": "Script completed\nWall time 0.1 seconds\nOutput:\n"},
              {"type": "input_text", "text": json.dumps({"chunk_id": "71f85b", "exit_code": 0, "output": "42\n"})}]
    follow_up = [CODE_MODE, *_codex_input(),
                 {"type": "custom_tool_call", "call_id": call.call_id, "name": "exec", "input": call.input},
                 {"type": "custom_tool_call_output", "call_id": call.call_id, "output": result}]
    _, second = await _responses_stream(oai, input=follow_up, tools=[])

    assert "response.custom_tool_call_input.delta" in types and "response.custom_tool_call_input.done" in types
    assert (call.type, call.name, call.namespace) == ("custom_tool_call", "exec", "functions")
    assert call.input == 'text(await tools.exec_command({cmd: "echo $((6 * 7))"}))'
    assert second.output_text == "42"


async def test_the_raw_responses_stream_names_each_event_and_numbers_it(mock_server: Server) -> None:
    events = await _events(mock_server, "/v1/responses", {"model": "m", "input": "hi", "stream": True})

    payloads = [json.loads(data) for _, data in events]
    assert [name for name, _ in events] == [p["type"] for p in payloads]
    assert [p["sequence_number"] for p in payloads] == list(range(len(payloads)))
    assert payloads[-1]["type"] == "response.completed" and payloads[-1]["response"]["usage"]["total_tokens"] > 0
    assert payloads[0]["response"]["status"] == "in_progress" and payloads[0]["response"]["usage"] is None


async def test_a_whole_response_on_the_bare_path_parses_with_the_sdk(mock_server: Server) -> None:
    async with openai.AsyncOpenAI(base_url=mock_server.base_url, api_key="k", max_retries=0) as client:
        response = await client.responses.create(model="m", input="What is the plan?", instructions="Be brief.")

    assert response.output_text == 'mock reply: received "What is the plan?"'
    assert (response.model, response.status, response.object) == ("mock", "completed", "response")
    assert response.usage is not None and response.usage.total_tokens == response.usage.input_tokens + 10


async def test_a_response_cut_at_max_output_tokens_is_incomplete(oai: openai.AsyncOpenAI) -> None:
    whole = await oai.responses.create(model="m", input="word " * 50, max_output_tokens=5)
    async with oai.responses.stream(model="m", input="word " * 50, max_output_tokens=5) as stream:
        *_, last = [event async for event in stream]

    assert whole.status == "incomplete" and whole.incomplete_details is not None
    assert whole.incomplete_details.reason == "max_output_tokens" and whole.output_text == "mock reply: received "[:20]
    assert last.type == "response.incomplete" and last.response.status == "incomplete"


async def test_scripted_calls_come_out_as_custom_or_function_calls_by_the_tool_offered(
        oai: openai.AsyncOpenAI, control: httpx.AsyncClient) -> None:
    await _script(control, {"tool_calls": [{"name": "exec", "arguments": "text(1 + 1)", "id": "exec-1"},
                                           {"name": "wait", "arguments": {"cell_id": "7"}}]}, "Scripted answer.")

    _, first = await _responses_stream(oai, input=[CODE_MODE, {"role": "user", "content": "go"}])
    _, second = await _responses_stream(oai, input="go")

    custom, function = first.output
    assert (custom.type, custom.call_id, custom.input) == ("custom_tool_call", "exec-1", "text(1 + 1)")
    assert (function.type, function.call_id, json.loads(function.arguments)) == ("function_call", "call_0_1",
                                                                                 {"cell_id": "7"})
    assert second.output_text == "Scripted answer."


# Anthropic Messages

CLAUDE_TOOLS: Any = [{"name": name, "description": f"The {name} tool.", "input_schema": schema} for name, schema in (
    ("Task", _schema("prompt", prompt=STRING)),
    ("Bash", _schema("command", command=STRING, timeout={"type": "number"}, description=STRING)),
    ("Read", _schema("file_path", file_path=STRING)), ("Write", _schema()), ("Edit", _schema()))]
REMINDER = "<system-reminder>\nTo run the tests, run `make test` first.\n</system-reminder>"


def _claude_request(*messages: Any, stream: bool = True) -> dict[str, Any]:
    """A request shaped as Claude Code sends it (``thinking``, ``context_management``, ``metadata``, ...)."""
    return {"model": "claude-opus-5-5", "max_tokens": 128000, "stream": stream, "tools": CLAUDE_TOOLS,
            "system": [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}],
            "thinking": {"type": "adaptive"}, "context_management": {"edits": []}, "metadata": {"user_id": "u"},
            "messages": [{"role": "user", "content": [{"type": "text", "text": REMINDER},
                                                      {"type": "text", "text": PROMPT}]}, *messages]}


def _sdk_arguments(request: dict[str, Any]) -> dict[str, Any]:
    """The request as SDK arguments: the members the SDK does not name go in ``extra_body``."""
    named = {key: request[key] for key in ("model", "max_tokens", "tools", "system", "messages")}
    return {**named, "extra_body": {key: request[key] for key in ("thinking", "context_management", "metadata")}}


async def test_claude_code_gets_its_bash_tool_called_over_a_beta_stream(
        mock_server: Server, control: httpx.AsyncClient) -> None:
    seen: list[str] = []

    async def record(request: httpx2.Request) -> None:
        seen.append(str(request.url))

    async with httpx2.AsyncClient(event_hooks={"request": [record]}) as http, anthropic.AsyncAnthropic(
            base_url=mock_server.base_url, auth_token="sk-test", http_client=http, max_retries=0) as client:
        arguments = _sdk_arguments(_claude_request())
        async with client.beta.messages.stream(**arguments, betas=["context-management-2025-06-27"],
                                               extra_query={"beta": "true"}) as stream:
            message = await stream.get_final_message()

    [block] = message.content
    assert (block.type, block.name, block.input) == ("tool_use", "Bash", {"command": COMMAND})
    assert (message.stop_reason, message.model) == ("tool_use", "mock")
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0
    assert seen == [mock_server.url("/v1/messages?beta=true")]
    [logged] = (await control.get("/mock/requests")).json()["requests"]
    assert (logged["path"], logged["api"], logged["has_authorization"]) == ("/v1/messages", "messages", True)


async def test_the_messages_stream_sends_anthropics_events_in_order(mock_server: Server) -> None:
    events = await _events(mock_server, "/v1/messages", _claude_request())

    payloads = [json.loads(data) for _, data in events]
    assert [name for name, _ in events] == [p["type"] for p in payloads] == [
        "message_start", "ping", "content_block_start", "content_block_delta", "content_block_delta",
        "content_block_stop", "message_delta", "message_stop"]
    assert payloads[2]["content_block"] == {"type": "tool_use", "id": "call_0_0", "name": "Bash", "input": {}}
    assert "".join(p["delta"]["partial_json"] for p in payloads[3:5]) == json.dumps({"command": COMMAND})
    assert payloads[6]["delta"]["stop_reason"] == "tool_use" and payloads[6]["usage"]["output_tokens"] > 0


async def test_a_tool_result_beside_a_reminder_is_answered_with_the_output(claude: anthropic.AsyncAnthropic) -> None:
    call = {"type": "tool_use", "id": "call_0_0", "name": "Bash", "input": {"command": COMMAND}}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_0_0", "content": "42",
                                           "is_error": False}, {"type": "text", "text": REMINDER}]}
    request = _claude_request({"role": "assistant", "content": [call]}, result,
                              {"role": "system", "content": "<total_tokens>9 tokens left</total_tokens>"})

    async with claude.messages.stream(**_sdk_arguments(request)) as stream:
        message = await stream.get_final_message()

    assert [(b.type, getattr(b, "text", None)) for b in message.content] == [("text", "42")]
    assert message.stop_reason == "end_turn" and message.usage.output_tokens == 1


async def test_a_whole_message_without_tools_is_plain_text(claude: anthropic.AsyncAnthropic) -> None:
    message = await claude.messages.create(model="m", max_tokens=100, system="Be brief.",
                                           messages=[{"role": "user", "content": "hello"}])

    assert [b.type for b in message.content] == ["text"]
    assert message.content[0].type == "text" and message.content[0].text == 'mock reply: received "hello"'
    assert (message.role, message.stop_reason, message.model) == ("assistant", "end_turn", "mock")


async def test_scripted_replies_come_out_as_content_blocks_and_a_scripted_error_in_anthropics_shape(
        claude: anthropic.AsyncAnthropic, control: httpx.AsyncClient) -> None:
    await _script(control, {"content": "Checking.", "tool_calls": [{"name": "Read", "arguments": {"file_path": "a"}}]},
                  {"error": {"status": 429, "message": "slow down"}})
    messages: Any = [{"role": "user", "content": "go"}]

    message = await claude.messages.create(model="m", max_tokens=100, messages=messages, tools=CLAUDE_TOOLS)
    with pytest.raises(anthropic.RateLimitError) as caught:
        await claude.messages.create(model="m", max_tokens=100, messages=messages)

    text, tool = message.content
    assert text.type == "text" and text.text == "Checking."
    assert tool.type == "tool_use" and (tool.name, tool.input) == ("Read", {"file_path": "a"})
    assert message.stop_reason == "tool_use"
    assert caught.value.body == {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}


async def test_scripted_arguments_that_are_not_an_object_stream_as_written_but_cannot_be_a_whole_tool_use(
        mock_server: Server, claude: anthropic.AsyncAnthropic, control: httpx.AsyncClient) -> None:
    await _script(control, *[{"tool_calls": [{"name": "Bash", "arguments": "{not json"}]}] * 2)

    events = await _events(mock_server, "/v1/messages", _claude_request())
    with pytest.raises(anthropic.InternalServerError, match="not a JSON object"):
        await claude.messages.create(model="m", max_tokens=100, messages=[{"role": "user", "content": "go"}])

    assert "".join(json.loads(data)["delta"].get("partial_json", "") for name, data in events
                   if name == "content_block_delta") == "{not json"


async def test_counting_tokens_measures_the_request(claude: anthropic.AsyncAnthropic) -> None:
    short = await claude.messages.count_tokens(model="m", messages=[{"role": "user", "content": "hi"}])
    longer = await claude.messages.count_tokens(model="m", messages=[{"role": "user", "content": "hi"}],
                                                tools=CLAUDE_TOOLS)

    assert short.input_tokens == 1 and longer.input_tokens > short.input_tokens


# Models, errors and labels


async def test_every_client_lists_the_one_mock_model(mock_server: Server, oai: openai.AsyncOpenAI,
                                                     claude: anthropic.AsyncAnthropic) -> None:
    openai_models = [model.id async for model in oai.models.list()]
    anthropic_models = [model.id async for model in claude.models.list()]
    async with httpx.AsyncClient(base_url=mock_server.base_url, timeout=10.0) as http:
        bare = (await http.get("/models")).json()
        one = (await http.get("/openai/v1/models/gpt-5")).json()
        info = await http.get("/v1/model/info")

    assert openai_models == anthropic_models == [model["id"] for model in bare["data"]] == ["mock"]
    assert one["id"] == "mock"
    assert info.status_code == 404


async def test_every_answer_is_labelled_with_the_rule_that_gave_it(mock_server: Server) -> None:
    async with httpx.AsyncClient(base_url=mock_server.base_url, timeout=10.0) as http:
        chat = await http.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}]})
        responses = await http.post("/v1/responses", json={"input": "x", "stream": True})
        messages = await http.post("/v1/messages", json=_claude_request(stream=False))

    assert [r.headers["x-mock-rule"] for r in (chat, responses, messages)] == ["echo", "echo", "shell"]
    assert chat.json()["model"] == messages.json()["model"] == "mock"


@pytest.mark.parametrize(("path", "body", "error"), [
    ("/v1/chat/completions", {"model": "m"}, {"error": {"message": "the request needs a 'messages' list",
                                                        "type": "mock_error", "code": 400}}),
    ("/openai/v1/responses", {"model": "m"}, {"error": {"message": "the request needs an 'input' string or list "
                                                                  "of items", "type": "mock_error", "code": 400}}),
    ("/v1/messages", {"model": "m"}, {"type": "error", "error": {"type": "invalid_request_error",
                                                                 "message": "the request needs a 'messages' list"}}),
    ("/v1/messages", [1, 2], {"type": "error", "error": {"type": "invalid_request_error",
                                                         "message": "the request body must be a JSON object"}}),
])
async def test_a_request_an_api_cannot_read_gets_a_400_in_that_apis_shape(
        mock_server: Server, control: httpx.AsyncClient, path: str, body: Any, error: dict[str, Any]) -> None:
    async with httpx.AsyncClient(base_url=mock_server.base_url, timeout=10.0) as http:
        response = await http.post(path, json=body)

    assert (response.status_code, response.json()) == (400, error)
    assert (await control.get("/mock/requests")).json()["requests"] == []
