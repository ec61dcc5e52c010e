"""The mock model's answers: scripted replies and the deterministic rules used without a script.

Pure functions of the request body, so the behaviour documented in the package docstring can
be tested without a server and is the same on every run.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from prefect_agentenv.jsontypes import JsonObject, JsonValue
from prefect_agentenv.grading.judge import read_criteria_block

MOCK_MODEL_NAME = "mock"
"""Every response names this model, so reports show that the mock answered."""
USER_SIMULATOR_MARKER = "[agentenv:user-simulator]"
"""A system prompt containing this marks a user-simulator request."""
USER_SIMULATOR_ANSWER = {"message": "Thanks, that is all.", "done": True}
MOCK_JUDGE_JUSTIFICATION = "mock judge: passes every criterion by construction (no real grading happened)"
CHARS_PER_TOKEN = 4
"""The mock counts one token per four characters, the usual rule of thumb for English."""

_CALL_LINE = re.compile(r"^[ \t]*CALL[ \t]+([A-Za-z0-9_.\-]+)[ \t]*(.*?)[ \t]*$", re.MULTILINE)
_SUMMARY_CHARS = 200
_TOOL_RESULT_CHARS = 160


class ScriptedToolCall(BaseModel):
    """A tool call to return; ``arguments`` may be an object or JSON text."""

    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: JsonObject | str = Field(default_factory=dict)
    id: str | None = None

    def arguments_text(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


class ScriptedError(BaseModel):
    """Answer with an HTTP error instead of a completion."""

    model_config = ConfigDict(extra="forbid")

    status: int = Field(default=500, ge=400, le=599)
    message: str = "mock error"


class ScriptedReply(BaseModel):
    """One queued answer; a bare string in the script is ``{"content": string}``."""

    model_config = ConfigDict(extra="forbid")

    content: str | None = None
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    """Defaults to ``tool_calls`` when there are calls, else ``stop``; ``length`` marks truncation."""
    usage: dict[str, int] | None = None
    """Token counts to report instead of the mock's own count."""
    delay_seconds: float = Field(default=0.0, ge=0.0, le=600.0)
    """Wait this long before answering (timeout tests)."""
    error: ScriptedError | None = None

    @field_validator("tool_calls", mode="before")
    @classmethod
    def _one_call_as_list(cls, value: Any) -> Any:
        return [value] if isinstance(value, dict) else value


class MockAnswer(BaseModel):
    """What the server sends back for one request."""

    content: str | None = None
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    finish_reason: str = "stop"
    usage: dict[str, int] | None = None
    rule: str
    """Which rule produced it: script, judge, user_simulator, call or echo."""


def parse_script(replies: Sequence[Any]) -> list[ScriptedReply]:
    """Validate a script's replies (strings or objects); raises pydantic's ValidationError."""
    return [ScriptedReply(content=item) if isinstance(item, str) else ScriptedReply.model_validate(item)
            for item in replies]


def scripted_answer(reply: ScriptedReply, body: JsonObject) -> MockAnswer:
    """A queued reply, exactly as written (tool-call ids filled in when missing)."""
    turn = _assistant_turns(_messages(body))
    calls = [call if call.id else call.model_copy(update={"id": f"call_{turn}_{i}"})
             for i, call in enumerate(reply.tool_calls)]
    finish = reply.finish_reason or ("tool_calls" if calls else "stop")
    return MockAnswer(content=reply.content, tool_calls=calls, finish_reason=finish, usage=reply.usage,
                      rule="script")


def default_answer(body: JsonObject) -> MockAnswer:
    """The unscripted answer: judge, then user simulator, then ``CALL`` lines, then echo.

    The judge and user-simulator rules come first because their prompts quote untrusted text
    that may itself contain ``CALL`` lines, which must not turn into tool calls.
    """
    messages = _messages(body)
    instructions = _instructions(messages)
    criteria = read_criteria_block(instructions)
    if criteria is not None:
        return _capped(_judge_answer(*criteria), body, "judge")
    if USER_SIMULATOR_MARKER in instructions:
        return _capped(json.dumps(USER_SIMULATOR_ANSWER), body, "user_simulator")
    call = _next_call(messages, _offered_tools(body))
    if isinstance(call, ScriptedToolCall):
        return MockAnswer(tool_calls=[call], finish_reason="tool_calls", rule="call")
    return _capped(call or _echo(messages), body, "echo" if call is None else "call")


def usage_for(body: JsonObject, answer: MockAnswer) -> dict[str, int]:
    """Token counts: the scripted ones, else one token per four characters."""
    if answer.usage is not None:
        prompt = answer.usage.get("prompt_tokens", 0)
        completion = answer.usage.get("completion_tokens", 0)
        return {"prompt_tokens": prompt, "completion_tokens": completion,
                "total_tokens": answer.usage.get("total_tokens", prompt + completion)}
    prompt = sum(count_tokens(_text(m.get("content"))) for m in _messages(body))
    completion = count_tokens(answer.content or "") + sum(
        count_tokens(c.name + c.arguments_text()) for c in answer.tool_calls)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def count_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _capped(text: str, body: JsonObject, rule: str) -> MockAnswer:
    """A text answer, cut to ``max_tokens`` (finish ``length``) when it is longer."""
    limit = body.get("max_tokens", body.get("max_completion_tokens"))
    if isinstance(limit, int) and limit >= 0 and count_tokens(text) > limit:
        return MockAnswer(content=text[: limit * CHARS_PER_TOKEN], finish_reason="length", rule=rule)
    return MockAnswer(content=text, finish_reason="stop", rule=rule)


def _judge_answer(output_format: str, judge_ids: list[str]) -> str:
    verdict: JsonObject = {"score": 1.0} if output_format == "rubric_partial" else {"result": "pass"}
    return json.dumps({"results": [{"id": judge_id, **verdict, "justification": MOCK_JUDGE_JUSTIFICATION}
                                   for judge_id in judge_ids]})


def _next_call(messages: list[JsonObject], offered: list[str]) -> ScriptedToolCall | str | None:
    """The next ``CALL`` line of the last user message not yet answered with a call.

    Returns the call, a text explaining why a line cannot be called, or None when there is no
    line left (or no tools offered) and the echo rule applies.
    """
    if not offered:
        return None
    last_user = _last_index(messages, "user")
    if last_user is None:
        return None
    lines = _CALL_LINE.findall(_text(messages[last_user].get("content")))
    done = sum(len(calls) for m in messages[last_user + 1:]
               if m.get("role") == "assistant" and isinstance(calls := m.get("tool_calls"), list))
    if done >= len(lines):
        return None
    name, raw_args = lines[done]
    tool = _match_tool(name, offered)
    if tool is None:
        return f"mock reply: cannot CALL {name!r}: the offered tools are {', '.join(offered)}"
    try:
        arguments = json.loads(raw_args) if raw_args else {}
    except ValueError:
        return f"mock reply: cannot CALL {name!r}: its arguments are not JSON: {raw_args[:80]}"
    if not isinstance(arguments, dict):
        return f"mock reply: cannot CALL {name!r}: its arguments must be a JSON object"
    return ScriptedToolCall(id=f"call_{_assistant_turns(messages)}_0", name=tool, arguments=arguments)


def _match_tool(name: str, offered: list[str]) -> str | None:
    """The offered tool called ``name``, or the only one exposed as ``<server>__name``."""
    if name in offered:
        return name
    suffixed = [tool for tool in offered if tool.endswith(f"__{name}")]
    return suffixed[0] if len(suffixed) == 1 else None


def _echo(messages: list[JsonObject]) -> str:
    """``mock reply: <last user message>`` plus a short summary of the tool results after it."""
    last_user = _last_index(messages, "user")
    said = _squash(_text(messages[last_user].get("content")), _SUMMARY_CHARS) if last_user is not None else ""
    names = {call.get("id"): _function_name(call)
             for m in messages if m.get("role") == "assistant" for call in _calls(m)}
    results = [f"{names.get(m.get('tool_call_id')) or 'tool'} -> {_squash(_text(m.get('content')), _TOOL_RESULT_CHARS)}"
               for m in messages[(last_user or 0) + 1:] if m.get("role") == "tool"]
    text = f'mock reply: received "{said}"'
    if results:
        text += "; tool results: " + "; ".join(results)
    return text


def _instructions(messages: list[JsonObject]) -> str:
    """The system messages and the last user message, where judge and simulator prompts live.

    A judge reached over A2A may get its whole prompt as one user message. Untrusted text
    cannot fake the criteria block there: the judge prompt escapes every ``<<<`` it quotes.
    """
    texts = [_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer")]
    last_user = _last_index(messages, "user")
    if last_user is not None:
        texts.append(_text(messages[last_user].get("content")))
    return "\n".join(texts)


def _messages(body: JsonObject) -> list[JsonObject]:
    raw = body.get("messages")
    return [m for m in raw if isinstance(m, dict)] if isinstance(raw, list) else []


def _offered_tools(body: JsonObject) -> list[str]:
    tools = body.get("tools")
    if not isinstance(tools, list):
        return []
    return [str(function["name"]) for t in tools
            if isinstance(t, dict) and isinstance(function := t.get("function"), dict) and "name" in function]


def _calls(message: JsonObject) -> list[JsonObject]:
    """An assistant message's tool calls (the objects among them)."""
    calls = message.get("tool_calls")
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def _function_name(call: JsonObject) -> JsonValue:
    function = call.get("function")
    return function.get("name") if isinstance(function, dict) else None


def _assistant_turns(messages: list[JsonObject]) -> int:
    return sum(1 for m in messages if m.get("role") == "assistant")


def _last_index(messages: list[JsonObject], role: str) -> int | None:
    return next((i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == role), None)


def _text(content: JsonValue) -> str:
    """Content is a string or a list of ``{type: text, text}`` parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _squash(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
