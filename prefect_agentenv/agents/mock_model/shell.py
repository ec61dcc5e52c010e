"""The shell rule: a prompt that asks to run a command gets it run by the offered shell tool.

Coding-agent harnesses each offer a shell tool of their own (OpenCode and pi ``bash
{command}``, OpenHands ``terminal {command}``, Codex ``exec_command {cmd}`` or, in its code
mode, a custom ``exec`` tool taking JavaScript, Claude Code ``Bash {command}``). A smoke task asks
the agent to run one command and reply with what it printed; with this rule the mock plays the
model's part on every wire, so such a task passes against the mock unchanged.
"""

from __future__ import annotations

import json
import re

from prefect_agentenv.agents.mock_model.conversation import Conversation, OfferedTool, ToolCall
from prefect_agentenv.jsontypes import JsonObject, JsonValue

SHELL_TOOL_NAMES = ("bash", "terminal", "exec_command", "shell_command", "shell", "run_shell_command")
"""Function tools that run a shell command, in order of preference (names match in any case)."""
CODE_MODE_TOOL = "exec"
"""Codex's code mode offers one custom tool of this name that runs JavaScript calling the others."""
NO_OUTPUT_REPLY = "mock reply: the command printed nothing"

_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
"""Claude Code's reminders ride in the user's message; they are not the user's words."""
_COMMAND = re.compile(
    r"\b(?:run|execute)\b[^`]{0,200}?(?:```[\w+-]*[ \t]*\n(?P<block>.*?)\n?```|`(?P<inline>[^`\n]+)`)",
    re.IGNORECASE | re.DOTALL)
_STATUS_LINE = re.compile(r"^\[[A-Z][^\[\]]* [^\[\]]*\]$")
"""A trailing ``[The command completed with exit code 0.]`` a harness adds after the output."""
_OUTPUT_KEYS = ("output", "stdout", "aggregated_output")


def shell_answer(conversation: Conversation) -> ToolCall | str | None:
    """The shell call the last user message asks for, or, once it is made, the output it returned.

    None when the message names no command, no shell tool is offered, or the call was made but
    no result came back (the echo rule answers then).
    """
    last_user = conversation.last_index("user")
    if last_user is None or not conversation.tools:
        return None
    command = requested_command(conversation.turns[last_user].text)
    tool = shell_tool(conversation.tools)
    if command is None or tool is None:
        return None
    later = conversation.turns[last_user + 1:]
    if not any(turn.role == "assistant" and turn.calls for turn in later):
        return ToolCall(id=f"call_{conversation.assistant_turns()}_0", name=tool.name,
                        arguments=shell_arguments(tool, command))
    results = [turn for turn in later if turn.role == "tool"]
    if not results:
        return None
    return command_output(results[-1].text) or NO_OUTPUT_REPLY


def requested_command(text: str) -> str | None:
    """The last backticked command (or fenced block) after the word "run" or "execute"."""
    matches = list(_COMMAND.finditer(_REMINDER.sub("", text)))
    if not matches:
        return None
    command = (matches[-1].group("block") or matches[-1].group("inline") or "").strip()
    return command or None


def shell_tool(tools: list[OfferedTool]) -> OfferedTool | None:
    """The offered function tool that runs a shell command, else Codex's code-mode ``exec``."""
    functions = {tool.name.lower(): tool for tool in reversed(tools) if tool.kind == "function"}
    for name in SHELL_TOOL_NAMES:
        if name in functions:
            return functions[name]
    return next((tool for tool in tools if tool.kind == "custom" and tool.name == CODE_MODE_TOOL), None)


def shell_arguments(tool: OfferedTool, command: str) -> JsonObject | str:
    """The command in the shape ``tool`` takes.

    Code mode's ``exec`` gets JavaScript that runs the command and appends what it returned to
    the tool's output. A function tool gets the command under its schema's ``command`` or
    ``cmd`` property (an array property gets ``["bash", "-lc", command]``), and every other
    required property its default, its first allowed value, ``false`` or ``""``.
    """
    if tool.kind == "custom":
        return f"text(await tools.exec_command({{cmd: {json.dumps(command)}}}))"
    properties = _object(tool.parameters.get("properties"))
    listed = tool.parameters.get("required")
    required = [name for name in listed if isinstance(name, str)] if isinstance(listed, list) else []
    named: list[str] = [name for name in ("command", "cmd") if name in properties]
    key = (named or [name for name in required if _object(properties.get(name)).get("type") == "string"]
           or ["command"])[0]
    value: JsonValue = ["bash", "-lc", command] if _object(properties.get(key)).get("type") == "array" else command
    arguments: JsonObject = {key: value}
    for name in required:
        filler = _filler(_object(properties.get(name)))
        if name not in arguments and filler is not None:
            arguments[name] = filler
    return arguments


def command_output(text: str) -> str:
    """What a command printed, from a shell tool's result as a harness words it.

    The text after the last ``Output:`` line (Codex's header); of a JSON object, its ``output``
    (or ``stdout``: Codex's ``exec_command`` result as code mode returns it); without trailing
    ``[Status sentence.]`` lines (OpenHands); trimmed.
    """
    lines = text.strip().splitlines()
    marks = [i for i, line in enumerate(lines) if line.strip() == "Output:"]
    text = "\n".join(lines[marks[-1] + 1:] if marks else lines).strip()
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        text = next((value for key in _OUTPUT_KEYS if isinstance(value := parsed.get(key), str)), text)
    lines = text.strip().splitlines()
    while lines and (not lines[-1].strip() or _STATUS_LINE.match(lines[-1].strip())):
        lines.pop()
    return "\n".join(lines).strip()


def _filler(schema: JsonObject) -> JsonValue:
    if "default" in schema:
        return schema["default"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    fillers: JsonObject = {"boolean": False, "string": ""}
    return fillers.get(str(schema.get("type")))


def _object(value: JsonValue) -> JsonObject:
    return value if isinstance(value, dict) else {}
