"""The Responses API (``POST /v1/responses``, also under ``/openai/v1`` and bare): read, answer, stream.

A request's ``input`` is a string or a list of items: messages, ``function_call`` /
``custom_tool_call`` items and their ``*_output`` items, and Codex's ``additional_tools`` item,
whose tools (nested in ``namespace`` entries or not) are offered like the top-level ``tools``.
A call to a custom tool (Codex's code-mode ``exec``) comes back as a ``custom_tool_call`` with
raw ``input``; any other as a ``function_call`` (with the ``namespace`` it was offered under).

The stream is OpenAI's: ``response.created``, ``response.in_progress``, then per output item
``response.output_item.added``, its content events (``response.content_part.added``,
``response.output_text.delta`` / ``.done``, ``response.content_part.done`` for text;
``response.function_call_arguments.delta`` / ``.done`` or ``response.custom_tool_call_input.delta``
/ ``.done`` for a call) and ``response.output_item.done``, then ``response.completed`` with the
usage (``response.incomplete`` when the answer was cut at ``max_output_tokens``).
"""

from __future__ import annotations

from prefect_agentenv.agents.mock_model.conversation import (
    MOCK_MODEL_NAME,
    Conversation,
    OfferedTool,
    ToolCall,
    Turn,
    objects,
    text_of,
)
from prefect_agentenv.agents.mock_model.wire import Exchange, ServerEvent, WireApi, WireError, as_int, pieces
from prefect_agentenv.jsontypes import JsonObject, JsonValue

_ROLES = {"user": "user", "system": "system", "developer": "system", "assistant": "assistant"}
_CALLS = {"function_call": "arguments", "custom_tool_call": "input"}
_OUTPUTS = ("function_call_output", "custom_tool_call_output")


def read_request(body: JsonObject) -> Conversation:
    """The conversation of a Responses request: ``instructions`` as a system turn, then ``input``."""
    raw = body.get("input")
    if isinstance(raw, str):
        items: list[JsonObject] = [{"type": "message", "role": "user", "content": raw}]
    elif isinstance(raw, list):
        items = objects(raw)
    else:
        raise WireError("the request needs an 'input' string or list of items")
    turns: list[Turn] = []
    if isinstance(instructions := body.get("instructions"), str) and instructions:
        turns.append(Turn(role="system", text=instructions))
    for item in items:
        _add(turns, item)
    offered = objects(body.get("tools")) + [tool for item in items if item.get("type") == "additional_tools"
                                            for tool in objects(item.get("tools"))]
    return Conversation(turns=turns, tools=_tools(offered), max_tokens=as_int(body.get("max_output_tokens")))


def _add(turns: list[Turn], item: JsonObject) -> None:
    """One input item onto the turns; an assistant's message and calls in a row make one turn."""
    kind = item.get("type", "message")
    if kind in _CALLS:
        value = item.get(_CALLS[str(kind)])
        call = ToolCall(name=str(item.get("name", "")), arguments=value if isinstance(value, str) else "",
                        id=str(item.get("call_id", "")) or None)
        _assistant(turns).calls.append(call)
    elif kind in _OUTPUTS:
        turns.append(Turn(role="tool", text=text_of(item.get("output")), call_id=str(item.get("call_id", ""))))
    elif kind == "message" and (role := _ROLES.get(str(item.get("role")))) is not None:
        text = text_of(item.get("content"))
        if role == "assistant":
            _assistant(turns).text += text
        else:
            turns.append(Turn(role="user" if role == "user" else "system", text=text))


def _assistant(turns: list[Turn]) -> Turn:
    if not turns or turns[-1].role != "assistant":
        turns.append(Turn(role="assistant"))
    return turns[-1]


def _tools(raw: list[JsonObject], namespace: str | None = None) -> list[OfferedTool]:
    """Function and custom tools, a ``namespace`` entry's own tools under its name; others skipped."""
    tools: list[OfferedTool] = []
    for spec in raw:
        kind, name = spec.get("type", "function"), spec.get("name")
        if kind == "namespace":
            tools += _tools(objects(spec.get("tools")), str(name) if name else namespace)
        elif kind in ("function", "custom") and isinstance(name, str):
            parameters = spec.get("parameters")
            tools.append(OfferedTool(name=name, kind="custom" if kind == "custom" else "function",
                                     description=str(spec.get("description") or ""), namespace=namespace,
                                     parameters=parameters if isinstance(parameters, dict) else {}))
    return tools


def reply(exchange: Exchange) -> JsonObject:
    """A ``response`` object, completed (or incomplete when cut at the token cap)."""
    output: list[JsonValue] = [_item(exchange, i, done=True) for i in _indexes(exchange)]
    return _response(exchange, _status(exchange), output)


def events(exchange: Exchange) -> list[ServerEvent]:
    """The answer as Responses stream events, numbered by ``sequence_number``."""
    status = _status(exchange)
    stream: list[JsonObject] = [
        {"type": "response.created", "response": _response(exchange, "in_progress", [], usage=False)},
        {"type": "response.in_progress", "response": _response(exchange, "in_progress", [], usage=False)}]
    for position, index in enumerate(_indexes(exchange)):
        stream += _item_events(exchange, index, position)
    done: list[JsonValue] = [_item(exchange, i, done=True) for i in _indexes(exchange)]
    final = "response.incomplete" if status == "incomplete" else "response.completed"
    stream.append({"type": final, "response": _response(exchange, status, done)})
    return [ServerEvent({**event, "sequence_number": n}, str(event["type"])) for n, event in enumerate(stream)]


def _item_events(exchange: Exchange, index: int, position: int) -> list[JsonObject]:
    """``output_item.added``, the item's deltas and done events, ``output_item.done``."""
    item = _item(exchange, index, done=True)
    where: JsonObject = {"item_id": item["id"], "output_index": position}
    opened: list[JsonObject] = [{"type": "response.output_item.added", "output_index": position,
                                 "item": _item(exchange, index, done=False)}]
    closed: list[JsonObject] = [{"type": "response.output_item.done", "output_index": position, "item": item}]
    if item["type"] == "message":
        text = exchange.answer.content or ""
        part: JsonObject = {"type": "output_text", "text": text, "annotations": []}
        at: JsonObject = {**where, "content_index": 0}
        return [*opened, {"type": "response.content_part.added", **at, "part": {**part, "text": ""}},
                *({"type": "response.output_text.delta", **at, "delta": piece, "logprobs": []}
                  for piece in pieces(text)),
                {"type": "response.output_text.done", **at, "text": text, "logprobs": []},
                {"type": "response.content_part.done", **at, "part": part}, *closed]
    field, kind = ("input", "custom_tool_call_input") if item["type"] == "custom_tool_call" \
        else ("arguments", "function_call_arguments")
    whole = str(item[field])
    return [*opened, *({"type": f"response.{kind}.delta", **where, "delta": piece} for piece in pieces(whole)),
            {"type": f"response.{kind}.done", **where, field: whole}, *closed]


def _indexes(exchange: Exchange) -> list[int]:
    """The output items: -1 for the text message (when there is text), then each call's index."""
    text = [-1] if exchange.answer.content or not exchange.answer.tool_calls else []
    return text + list(range(len(exchange.answer.tool_calls)))


def _item(exchange: Exchange, index: int, *, done: bool) -> JsonObject:
    """Output item ``index`` (-1: the message), whole or as first announced (empty, in progress)."""
    number, answer = exchange.number, exchange.answer
    if index < 0:
        status = _status(exchange) if done else "in_progress"
        content: list[JsonValue] = [{"type": "output_text", "text": answer.content or "", "annotations": []}] \
            if done else []
        return {"type": "message", "id": f"msg_mock_{number}", "status": status, "role": "assistant",
                "content": content}
    call = answer.tool_calls[index]
    tool = exchange.conversation.tool(call.name)
    custom = tool is not None and tool.kind == "custom"
    item: JsonObject = {"id": f"{'ctc' if custom else 'fc'}_mock_{number}_{index}", "call_id": call.id,
                        "name": call.name}
    if tool is not None and tool.namespace:
        item["namespace"] = tool.namespace
    if custom:
        return {"type": "custom_tool_call", **item, "input": call.arguments_text() if done else ""}
    return {"type": "function_call", **item, "arguments": call.arguments_text() if done else "",
            "status": "completed" if done else "in_progress"}


def _status(exchange: Exchange) -> str:
    return "incomplete" if exchange.answer.finish_reason == "length" else "completed"


def _response(exchange: Exchange, status: str, output: list[JsonValue], usage: bool = True) -> JsonObject:
    counts = exchange.usage
    return {
        "id": f"resp_mock_{exchange.number}", "object": "response", "created_at": 0, "status": status,
        "model": MOCK_MODEL_NAME, "output": output, "parallel_tool_calls": True, "tool_choice": "auto",
        "tools": [], "error": None, "instructions": None, "metadata": {}, "temperature": None, "top_p": None,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "usage": {"input_tokens": counts.input_tokens,
                  "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                  "output_tokens": counts.output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
                  "total_tokens": counts.total_tokens} if usage else None,
    }


def error_body(status: int, message: str) -> JsonObject:
    return {"error": {"message": message, "type": "mock_error", "code": status}}


RESPONSES = WireApi(name="responses", read=read_request, reply=reply, events=events, error_body=error_body)
