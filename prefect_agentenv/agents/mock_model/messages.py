"""The Anthropic Messages API (``POST /v1/messages``, Claude Code adds ``?beta=true``): read, answer, stream.

``system`` (a string or text blocks) is a system turn, and so is a ``system`` message among the
``messages`` (Claude Code sends some); a user message's ``tool_result`` blocks
are tool results (text beside them, such as a reminder, is not read as a new prompt); an
assistant's ``tool_use`` blocks are its calls. Tools with an ``input_schema`` are offered, and
so is Anthropic's own ``bash_*`` tool (``{command}``); other server tools are skipped.

The stream is Anthropic's: ``message_start``, ``ping``, per content block
``content_block_start``, ``content_block_delta`` (``text_delta``, or ``input_json_delta`` for a
tool's input) and ``content_block_stop``, then ``message_delta`` with the ``stop_reason`` and
the usage, then ``message_stop``.
"""

from __future__ import annotations

import json

from prefect_agentenv.agents.mock_model.conversation import (
    MOCK_MODEL_NAME,
    Conversation,
    OfferedTool,
    ToolCall,
    Turn,
    Usage,
    objects,
    text_of,
)
from prefect_agentenv.agents.mock_model.wire import Exchange, ServerEvent, WireApi, WireError, as_int, pieces
from prefect_agentenv.jsontypes import JsonObject, JsonValue

_STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}
"""Chat-completions finish reasons in Anthropic's words; any other (``pause_turn``, ...) passes as written."""
_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 529: "overloaded_error"}
_BASH_SCHEMA: JsonObject = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}


def read_request(body: JsonObject) -> Conversation:
    """The conversation of a Messages request."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise WireError("the request needs a 'messages' list")
    system = body.get("system")
    turns = [Turn(role="system", text=_joined(system))] if system else []
    for message in objects(messages):
        turns += _turns(message)
    tools = [tool for raw in objects(body.get("tools")) if (tool := _tool(raw)) is not None]
    return Conversation(turns=turns, tools=tools, max_tokens=as_int(body.get("max_tokens")))


def _turns(message: JsonObject) -> list[Turn]:
    role, content = message.get("role"), message.get("content")
    blocks: list[JsonObject] = objects(content) if isinstance(content, list) \
        else [{"type": "text", "text": text_of(content)}]
    text_blocks: list[JsonValue] = [block for block in blocks if block.get("type") == "text"]
    text = _joined(text_blocks)
    if role == "assistant":
        calls = [ToolCall(name=str(block.get("name", "")), id=str(block.get("id", "")) or None,
                          arguments=arguments if isinstance(arguments := block.get("input"), dict) else "")
                 for block in blocks if block.get("type") == "tool_use"]
        return [Turn(role="assistant", text=text, calls=calls)]
    if role == "system":
        return [Turn(role="system", text=text)]
    if role != "user":
        return []
    results = [Turn(role="tool", text=_joined(block.get("content")), call_id=str(block.get("tool_use_id", "")))
               for block in blocks if block.get("type") == "tool_result"]
    if not results:
        return [Turn(role="user", text=text)]
    return results + ([Turn(role="aside", text=text)] if text else [])


def _joined(content: JsonValue) -> str:
    """A string, or the text of a list of blocks, one block a line."""
    if not isinstance(content, list):
        return text_of(content)
    texts = [text_of(block.get("text")) if isinstance(block, dict) else text_of(block) for block in content]
    return "\n".join(text for text in texts if text)


def _tool(raw: JsonObject) -> OfferedTool | None:
    name, kind, schema = raw.get("name"), str(raw.get("type") or "custom"), raw.get("input_schema")
    if not isinstance(name, str):
        return None
    if isinstance(schema, dict) and kind == "custom":
        return OfferedTool(name=name, description=str(raw.get("description") or ""), parameters=schema)
    if kind.startswith("bash_"):
        return OfferedTool(name=name, parameters=_BASH_SCHEMA)
    return None


def reply(exchange: Exchange) -> JsonObject:
    """A ``message`` with its content blocks."""
    content: list[JsonValue] = [_block(exchange, i, done=True) for i in _indexes(exchange)]
    return {**_message(exchange), "content": content,
            "stop_reason": _stop_reason(exchange), "usage": _usage(exchange.usage)}


def events(exchange: Exchange) -> list[ServerEvent]:
    """The answer as Messages stream events."""
    start = {**_message(exchange), "content": [], "stop_reason": None,
             "usage": _usage(exchange.usage.model_copy(update={"output_tokens": 0, "scripted_total": None}))}
    stream: list[JsonObject] = [{"type": "message_start", "message": start}, {"type": "ping"}]
    for position, index in enumerate(_indexes(exchange)):
        block = _block(exchange, index, done=False)
        deltas: list[JsonValue]
        if block["type"] == "text":
            deltas = [{"type": "text_delta", "text": piece} for piece in pieces(exchange.answer.content or "")]
        else:
            deltas = [{"type": "input_json_delta", "partial_json": piece}
                      for piece in pieces(exchange.answer.tool_calls[index].arguments_text())]
        stream += [{"type": "content_block_start", "index": position, "content_block": block},
                   *({"type": "content_block_delta", "index": position, "delta": delta} for delta in deltas),
                   {"type": "content_block_stop", "index": position}]
    stream += [{"type": "message_delta", "delta": {"stop_reason": _stop_reason(exchange), "stop_sequence": None},
                "usage": _usage(exchange.usage)}, {"type": "message_stop"}]
    return [ServerEvent(event, str(event["type"])) for event in stream]


def _indexes(exchange: Exchange) -> list[int]:
    """The content blocks: -1 for the text (when there is text), then each call's index."""
    text = [-1] if exchange.answer.content or not exchange.answer.tool_calls else []
    return text + list(range(len(exchange.answer.tool_calls)))


def _block(exchange: Exchange, index: int, *, done: bool) -> JsonObject:
    """Content block ``index`` (-1: the text), whole or as ``content_block_start`` opens it."""
    if index < 0:
        return {"type": "text", "text": (exchange.answer.content or "") if done else ""}
    call = exchange.answer.tool_calls[index]
    return {"type": "tool_use", "id": call.id, "name": call.name, "input": _input(call) if done else {}}


def _input(call: ToolCall) -> JsonObject:
    """A tool_use block's input; a whole (not streamed) answer cannot carry arguments that are not an object."""
    try:
        parsed = call.arguments if isinstance(call.arguments, dict) else json.loads(call.arguments or "{}")
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        raise WireError(f"the arguments of the call to {call.name!r} are not a JSON object, which a tool_use "
                        "block needs (a streamed answer sends them as written)", status=500)
    return parsed


def _message(exchange: Exchange) -> JsonObject:
    return {"id": f"msg_mock_{exchange.number}", "type": "message", "role": "assistant",
            "model": MOCK_MODEL_NAME, "stop_sequence": None}


def _stop_reason(exchange: Exchange) -> str:
    finish = exchange.answer.finish_reason
    return _STOP_REASONS.get(finish, finish)


def _usage(usage: Usage) -> JsonObject:
    return {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def count_tokens(body: JsonObject) -> JsonObject:
    """``POST /v1/messages/count_tokens``: the request's size in the mock's tokens."""
    return {"input_tokens": read_request(body).prompt_tokens()}


def error_body(status: int, message: str) -> JsonObject:
    return {"type": "error", "error": {"type": _ERROR_TYPES.get(status, "api_error"), "message": message}}


MESSAGES = WireApi(name="messages", read=read_request, reply=reply, events=events, error_body=error_body)
