"""What the mock model reads and answers, whatever API carried it.

Each API module (``chat``, ``responses``, ``messages``) reads its request into a
:class:`Conversation` and writes a :class:`MockAnswer` back in its own shape, so the rules and
the script queue are written once and behave the same on every wire.
"""

from __future__ import annotations

import json
import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from prefect_agentenv.jsontypes import JsonObject, JsonValue

MOCK_MODEL_NAME = "mock"
"""Every response names this model, so reports show that the mock answered."""
CHARS_PER_TOKEN = 4
"""The mock counts one token per four characters, the usual rule of thumb for English."""

Role = Literal["system", "user", "assistant", "tool", "aside"]
"""``aside`` is text that arrives beside tool results (an Anthropic user message holding
``tool_result`` blocks and a reminder): it is counted, but it is not a new prompt."""


class ToolCall(BaseModel):
    """A tool call, made or to make; ``arguments`` is an object, or text (JSON text, or a custom
    tool's raw input)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: JsonObject | str = Field(default_factory=dict)
    id: str | None = None

    def arguments_text(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


class Turn(BaseModel):
    """One message of the conversation: who spoke, the text, and the calls or the result it holds."""

    role: Role
    text: str = ""
    calls: list[ToolCall] = Field(default_factory=list)
    """The tool calls an assistant turn made."""
    call_id: str | None = None
    """The call a tool turn answers."""


class OfferedTool(BaseModel):
    """A tool the request offers: a function (JSON arguments) or a custom tool (raw text input)."""

    name: str
    kind: Literal["function", "custom"] = "function"
    description: str = ""
    parameters: JsonObject = Field(default_factory=dict)
    """The JSON Schema of a function's arguments."""
    namespace: str | None = None
    """The Responses namespace the tool was offered under (a call names it back)."""


class Conversation(BaseModel):
    """A request read into the shape the rules work on."""

    turns: list[Turn] = Field(default_factory=list)
    tools: list[OfferedTool] = Field(default_factory=list)
    max_tokens: int | None = None
    """The request's cap on the answer (``max_tokens``, ``max_completion_tokens`` or ``max_output_tokens``)."""

    def tool(self, name: str) -> OfferedTool | None:
        return next((tool for tool in self.tools if tool.name == name), None)

    def last_index(self, role: Role) -> int | None:
        return next((i for i in range(len(self.turns) - 1, -1, -1) if self.turns[i].role == role), None)

    def assistant_turns(self) -> int:
        return sum(1 for turn in self.turns if turn.role == "assistant")

    def prompt_tokens(self) -> int:
        """The request's size in the mock's tokens: every turn's text and calls, and every tool's
        name, description and schema."""
        chars = sum(len(turn.text) + sum(len(c.name) + len(c.arguments_text()) for c in turn.calls)
                    for turn in self.turns)
        chars += sum(len(t.name) + len(t.description) + (len(json.dumps(t.parameters)) if t.parameters else 0)
                     for t in self.tools)
        return math.ceil(chars / CHARS_PER_TOKEN)


class Usage(BaseModel):
    """Token counts of one answer; each API names them its own way."""

    input_tokens: int
    output_tokens: int
    scripted_total: int | None = None
    """A scripted ``total_tokens``, kept even when it is not the sum."""

    @property
    def total_tokens(self) -> int:
        return self.scripted_total if self.scripted_total is not None else self.input_tokens + self.output_tokens


class MockAnswer(BaseModel):
    """What the server sends back for one request, before an API gives it its shape."""

    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str = "stop"
    """In chat-completions words: ``stop``, ``tool_calls``, ``length`` (each API maps them)."""
    usage: dict[str, int] | None = None
    """Scripted token counts, used instead of the mock's own."""
    rule: str
    """Which rule produced it: script, judge, user_simulator, call, shell or echo."""


def count_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def usage_for(conversation: Conversation, answer: MockAnswer) -> Usage:
    """The scripted counts (OpenAI or Anthropic names), else one token per four characters."""
    if answer.usage is not None:
        scripted = answer.usage
        return Usage(input_tokens=scripted.get("prompt_tokens", scripted.get("input_tokens", 0)),
                     output_tokens=scripted.get("completion_tokens", scripted.get("output_tokens", 0)),
                     scripted_total=scripted.get("total_tokens"))
    output = count_tokens(answer.content or "") + sum(
        count_tokens(call.name + call.arguments_text()) for call in answer.tool_calls)
    return Usage(input_tokens=conversation.prompt_tokens(), output_tokens=output)


def text_of(content: JsonValue) -> str:
    """Content as text: a string, or the ``text`` of a list of parts (any API's part types)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(text_of(part.get("text")) if isinstance(part, dict) else text_of(part)
                       for part in content)
    return ""


def objects(value: JsonValue) -> list[JsonObject]:
    """The objects of a JSON array (anything else in it, or a value that is not one, is skipped)."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
