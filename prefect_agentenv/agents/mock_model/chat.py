"""Chat completions (``POST /v1/chat/completions``): read a request, write the answer whole or streamed.

The stream is OpenAI's: ``data:`` chunks of ``chat.completion.chunk`` (the role, content
deltas, tool calls opened with their id and name and then argument deltas, a last chunk with
the ``finish_reason``), a usage chunk with no choices when ``stream_options.include_usage`` is
set, then ``data: [DONE]``.
"""

from __future__ import annotations

from prefect_agentenv.agents.mock_model.conversation import (
    MOCK_MODEL_NAME,
    Conversation,
    OfferedTool,
    Role,
    ToolCall,
    Turn,
    Usage,
    objects,
    text_of,
)
from prefect_agentenv.agents.mock_model.wire import Exchange, ServerEvent, WireApi, WireError, as_int, pieces
from prefect_agentenv.jsontypes import JsonObject

_ROLES: dict[str, Role] = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant",
          "tool": "tool", "function": "tool"}


def read_request(body: JsonObject) -> Conversation:
    """The conversation of a chat-completions request (unknown roles and malformed items skipped)."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise WireError("the request needs a 'messages' list")
    turns = [_turn(message) for message in objects(messages) if str(message.get("role")) in _ROLES]
    tools = [tool for raw in objects(body.get("tools")) if (tool := _tool(raw)) is not None]
    limit = as_int(body.get("max_tokens"))
    return Conversation(turns=turns, tools=tools,
                        max_tokens=limit if limit is not None else as_int(body.get("max_completion_tokens")))


def _turn(message: JsonObject) -> Turn:
    role = _ROLES[str(message.get("role"))]
    calls = []
    for raw in objects(message.get("tool_calls")):
        function = raw.get("function")
        function = function if isinstance(function, dict) else {}
        arguments = function.get("arguments")
        calls.append(ToolCall(name=str(function.get("name", "")), id=str(raw.get("id", "")) or None,
                              arguments=arguments if isinstance(arguments, (str, dict)) else ""))
    call_id = message.get("tool_call_id")
    return Turn(role=role, text=text_of(message.get("content")), calls=calls,
                call_id=str(call_id) if role == "tool" and call_id is not None else None)


def _tool(raw: JsonObject) -> OfferedTool | None:
    """``{"type": "function", "function": {...}}``, or the same members without the wrapper."""
    function = raw.get("function")
    spec = function if isinstance(function, dict) else raw
    name, parameters = spec.get("name"), spec.get("parameters")
    if not isinstance(name, str):
        return None
    return OfferedTool(name=name, description=str(spec.get("description") or ""),
                       parameters=parameters if isinstance(parameters, dict) else {})


def reply(exchange: Exchange) -> JsonObject:
    """A ``chat.completion``."""
    answer = exchange.answer
    message: JsonObject = {"role": "assistant", "content": answer.content}
    if answer.tool_calls:
        message["tool_calls"] = [{"id": call.id, "type": "function",
                                  "function": {"name": call.name, "arguments": call.arguments_text()}}
                                 for call in answer.tool_calls]
    return {**_head(exchange, "chat.completion"),
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": answer.finish_reason}],
            "usage": _usage(exchange.usage)}


def events(exchange: Exchange) -> list[ServerEvent]:
    """The answer as ``chat.completion.chunk`` events, then ``[DONE]``."""
    answer = exchange.answer
    options = exchange.body.get("stream_options")
    with_usage = isinstance(options, dict) and options.get("include_usage") is True
    head = _head(exchange, "chat.completion.chunk") | ({"usage": None} if with_usage else {})

    def chunk(delta: JsonObject, finish: str | None = None) -> ServerEvent:
        return ServerEvent({**head, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                                 "finish_reason": finish}]})

    stream = [chunk({"role": "assistant", "content": "" if answer.content else None})]
    stream += [chunk({"content": piece}) for piece in pieces(answer.content or "")]
    for index, call in enumerate(answer.tool_calls):
        stream.append(chunk({"tool_calls": [{"index": index, "id": call.id, "type": "function",
                                             "function": {"name": call.name, "arguments": ""}}]}))
        stream += [chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                   for piece in pieces(call.arguments_text())]
    stream.append(chunk({}, answer.finish_reason))
    if with_usage:
        stream.append(ServerEvent({**head, "choices": [], "usage": _usage(exchange.usage)}))
    return [*stream, ServerEvent("[DONE]")]


def error_body(status: int, message: str) -> JsonObject:
    return {"error": {"message": message, "type": "mock_error", "code": status}}


def _head(exchange: Exchange, kind: str) -> JsonObject:
    return {"id": f"mockcmpl-{exchange.number}", "object": kind, "created": 0, "model": MOCK_MODEL_NAME,
            "system_fingerprint": f"mock:{exchange.answer.rule}"}


def _usage(usage: Usage) -> JsonObject:
    return {"prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens,
            "total_tokens": usage.total_tokens}


CHAT = WireApi(name="chat", read=read_request, reply=reply, events=events, error_body=error_body)
