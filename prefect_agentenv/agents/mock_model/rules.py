"""The mock model's answers: scripted replies and the deterministic rules used without a script.

Pure functions of the conversation (read from any API by ``chat``, ``responses`` or
``messages``), so the behaviour documented in the package docstring can be tested without a
server, is the same on every run, and the same on every wire.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from prefect_agentenv.agents.mock_model.chat import read_request as read_chat_request
from prefect_agentenv.agents.mock_model.conversation import (
    CHARS_PER_TOKEN,
    Conversation,
    MockAnswer,
    OfferedTool,
    ToolCall,
    count_tokens,
)
from prefect_agentenv.agents.mock_model.shell import CODE_MODE_TOOL, shell_answer
from prefect_agentenv.grading.judge import read_criteria_block
from prefect_agentenv.jsontypes import JsonObject

USER_SIMULATOR_MARKER = "[agentenv:user-simulator]"
"""A system prompt containing this marks a user-simulator request."""
USER_SIMULATOR_ANSWER = {"message": "Thanks, that is all.", "done": True}
MOCK_JUDGE_JUSTIFICATION = "mock judge: passes every criterion by construction (no real grading happened)"
MOCK_JUDGE_FAIL_JUSTIFICATION = "mock judge: fails this criterion because its instructions say so (no real grading happened)"
MOCK_JUDGE_UNREADABLE = "mock judge: this answer is deliberately not a grading"
_JUDGE_DIRECTIVE = re.compile(r"\[mock-judge:\s*(fail|unreadable)([^\]]*)\]")
"""``[mock-judge: fail c2 c3]`` or ``[mock-judge: unreadable]`` in the judge's trusted instructions
(a grading policy) scripts a judge that errs on chosen criteria, for calibration tests."""
_UNTRUSTED_START = re.compile(r"^<<<BEGIN UNTRUSTED", re.MULTILINE)

_CALL_LINE = re.compile(r"^[ \t]*CALL[ \t]+([A-Za-z0-9_.\-]+)[ \t]*(.*?)[ \t]*$", re.MULTILINE)
_SUMMARY_CHARS = 200
_TOOL_RESULT_CHARS = 160

class ScriptedError(BaseModel):
    """Answer with an HTTP error instead of a completion."""

    model_config = ConfigDict(extra="forbid")

    status: int = Field(default=500, ge=400, le=599)
    message: str = "mock error"


class ScriptedReply(BaseModel):
    """One queued answer; a bare string in the script is ``{"content": string}``."""

    model_config = ConfigDict(extra="forbid")

    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    """Defaults to ``tool_calls`` when there are calls, else ``stop``; ``length`` marks truncation."""
    usage: dict[str, int] | None = None
    """Token counts to report instead of the mock's own."""
    delay_seconds: float = Field(default=0.0, ge=0.0, le=600.0)
    """Wait this long before answering (timeout tests)."""
    error: ScriptedError | None = None

    @field_validator("tool_calls", mode="before")
    @classmethod
    def _one_call_as_list(cls, value: Any) -> Any:
        return [value] if isinstance(value, dict) else value


def parse_script(replies: Sequence[Any]) -> list[ScriptedReply]:
    """Validate a script's replies (strings or objects); raises pydantic's ValidationError."""
    return [ScriptedReply(content=item) if isinstance(item, str) else ScriptedReply.model_validate(item)
            for item in replies]


def scripted_answer(reply: ScriptedReply, conversation: Conversation) -> MockAnswer:
    """A queued reply, exactly as written (tool-call ids filled in when missing)."""
    turn = conversation.assistant_turns()
    calls = [call if call.id else call.model_copy(update={"id": f"call_{turn}_{i}"})
             for i, call in enumerate(reply.tool_calls)]
    finish = reply.finish_reason or ("tool_calls" if calls else "stop")
    return MockAnswer(content=reply.content, tool_calls=calls, finish_reason=finish, usage=reply.usage,
                      rule="script")


def default_answer(request: Conversation | JsonObject) -> MockAnswer:
    """The unscripted answer: judge, user simulator, ``CALL`` lines, a shell command, then echo.

    ``request`` is a conversation, or a chat-completions request body. The judge and
    user-simulator rules come first because their prompts quote untrusted text that may itself
    contain ``CALL`` lines or commands, which must not turn into tool calls.
    """
    conversation = request if isinstance(request, Conversation) else read_chat_request(request)
    instructions = _instructions(conversation)
    criteria = read_criteria_block(instructions)
    if criteria is not None:
        return _capped(_judge_answer(*criteria, _judge_directive(instructions)), conversation, "judge")
    if USER_SIMULATOR_MARKER in instructions:
        return _capped(json.dumps(USER_SIMULATOR_ANSWER), conversation, "user_simulator")
    call = _next_call(conversation)
    if isinstance(call, ToolCall):
        return MockAnswer(tool_calls=[call], finish_reason="tool_calls", rule="call")
    if call is not None:
        return _capped(call, conversation, "call")
    shell = shell_answer(conversation)
    if isinstance(shell, ToolCall):
        return MockAnswer(tool_calls=[shell], finish_reason="tool_calls", rule="shell")
    if shell is not None:
        return _capped(shell, conversation, "shell")
    return _capped(_echo(conversation), conversation, "echo")


def _capped(text: str, conversation: Conversation, rule: str) -> MockAnswer:
    """A text answer, cut to the request's token cap (finish ``length``) when it is longer."""
    limit = conversation.max_tokens
    if limit is not None and limit >= 0 and count_tokens(text) > limit:
        return MockAnswer(content=text[: limit * CHARS_PER_TOKEN], finish_reason="length", rule=rule)
    return MockAnswer(content=text, finish_reason="stop", rule=rule)


def _judge_answer(output_format: str, judge_ids: list[str], directive: tuple[str, set[str]] | None) -> str:
    """Every criterion passes, unless the trusted instructions script failures or an unreadable answer."""
    if directive is not None and directive[0] == "unreadable":
        return MOCK_JUDGE_UNREADABLE
    failing = directive[1] if directive is not None else set()
    rows: list[JsonObject] = []
    for judge_id in judge_ids:
        fails = judge_id in failing
        if output_format == "rubric_partial":
            verdict: JsonObject = {"score": 0.0 if fails else 1.0}
        else:
            verdict = {"result": "fail" if fails else "pass"}
        why = MOCK_JUDGE_FAIL_JUSTIFICATION if fails else MOCK_JUDGE_JUSTIFICATION
        rows.append({"id": judge_id, **verdict, "justification": why})
    return json.dumps({"results": rows})


def _judge_directive(instructions: str) -> tuple[str, set[str]] | None:
    """The scripted behaviour named in the trusted part of a judge prompt (before any fenced data,
    so an agent under test cannot script its own grade)."""
    trusted = _UNTRUSTED_START.split(instructions, maxsplit=1)[0]
    match = _JUDGE_DIRECTIVE.search(trusted)
    if match is None:
        return None
    return match.group(1), set(match.group(2).replace(",", " ").split())


def _next_call(conversation: Conversation) -> ToolCall | str | None:
    """The next ``CALL`` line of the last user message not yet answered with a call.

    Returns the call, a text explaining why a line cannot be called, or None when there is no
    line left (or no tools offered) and the later rules apply.
    """
    turns, offered = conversation.turns, conversation.tools
    last_user = conversation.last_index("user")
    if not offered or last_user is None:
        return None
    lines = _CALL_LINE.findall(turns[last_user].text)
    done = sum(len(turn.calls) for turn in turns[last_user + 1:] if turn.role == "assistant")
    if done >= len(lines):
        return None
    name, raw_args = lines[done]
    tool = _match_tool(name, offered)
    call_id = f"call_{conversation.assistant_turns()}_0"
    code_mode = next((t for t in offered if t.kind == "custom" and t.name == CODE_MODE_TOOL), None)
    if tool is None and code_mode is not None:
        try:
            arguments = _call_arguments(raw_args)
        except ValueError:
            return f"mock reply: cannot CALL {name!r}: its arguments are not JSON: {raw_args[:80]}"
        return ToolCall(id=call_id, name=code_mode.name, arguments=_nested_call(name, arguments))
    if tool is None:
        return f"mock reply: cannot CALL {name!r}: the offered tools are {', '.join(t.name for t in offered)}"
    if tool.kind == "custom":
        return ToolCall(id=call_id, name=tool.name, arguments=raw_args)
    try:
        arguments = _call_arguments(raw_args)
    except ValueError:
        return f"mock reply: cannot CALL {name!r}: its arguments are not JSON: {raw_args[:80]}"
    if not isinstance(arguments, dict):
        return f"mock reply: cannot CALL {name!r}: its arguments must be a JSON object"
    return ToolCall(id=call_id, name=tool.name, arguments=arguments)


def _call_arguments(raw: str) -> object:
    """A ``CALL`` line's JSON arguments. OpenCode's ``run`` hands the model its prompt as a JSON string
    literal (quoted, every ``"`` escaped): a line that reads that way is unescaped first."""
    if not raw:
        return {}
    try:
        return json.loads(raw)
    except ValueError:
        literal = raw[: raw.rfind("}") + 1]
        if '\\"' not in literal:
            raise
        return json.loads(json.loads(f'"{literal}"'))


def _nested_call(name: str, arguments: object) -> str:
    """Codex's code mode: JavaScript for its ``exec`` tool that calls the nested tool ``name`` (or the one named
    ``<server>__name``: an MCP server's tools are nested, and may be left out of ``exec``'s description, but
    are always listed in ``ALL_TOOLS``) and appends what it returned, or says which tools there are."""
    return (f"const wanted = {json.dumps(name)}; const args = {json.dumps(arguments)};\n"
            "const found = ALL_TOOLS.filter(t => t.name === wanted || t.name.endsWith('__' + wanted));\n"
            "if (found.length !== 1) { text(`cannot CALL ${wanted}: the nested tools are "
            "${ALL_TOOLS.map(t => t.name).join(', ')}`); }\n"
            "else { text(await tools[found[0].name](args)); }")


def _match_tool(name: str, offered: list[OfferedTool]) -> OfferedTool | None:
    """The offered tool called ``name``, or the only one exposed as ``<server>__name``."""
    exact = [tool for tool in offered if tool.name == name]
    if exact:
        return exact[0]
    suffixed = [tool for tool in offered if tool.name.endswith(f"__{name}")]
    return suffixed[0] if len(suffixed) == 1 else None


def _echo(conversation: Conversation) -> str:
    """``mock reply: <last user message>`` plus a short summary of the tool results after it."""
    turns = conversation.turns
    last_user = conversation.last_index("user")
    said = _squash(turns[last_user].text, _SUMMARY_CHARS) if last_user is not None else ""
    names = {call.id: call.name for turn in turns if turn.role == "assistant" for call in turn.calls}
    results = [f"{names.get(turn.call_id) or 'tool'} -> {_squash(turn.text, _TOOL_RESULT_CHARS)}"
               for turn in turns[(last_user or 0) + 1:] if turn.role == "tool"]
    text = f'mock reply: received "{said}"'
    if results:
        text += "; tool results: " + "; ".join(results)
    return text


def _instructions(conversation: Conversation) -> str:
    """The system messages and the last user message, where judge and simulator prompts live.

    A judge reached over A2A may get its whole prompt as one user message. Untrusted text
    cannot fake the criteria block there: the judge prompt escapes every ``<<<`` it quotes.
    """
    texts = [turn.text for turn in conversation.turns if turn.role == "system"]
    last_user = conversation.last_index("user")
    if last_user is not None:
        texts.append(conversation.turns[last_user].text)
    return "\n".join(texts)


def _squash(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
