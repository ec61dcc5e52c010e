"""Reading a call's model and tokens out of the upstream's answer as it passes, whole or streamed.

The gateway counts from the upstream's own usage, never from the client's word. A streamed answer
is read event by event beside the relay (a chunk is forwarded before it is read, and the last
partial line waits for its end): chat completions' usage chunk (sent when the request asked for
``stream_options.include_usage``), the Responses API's ``response.completed`` (or
``.incomplete`` / ``.failed``) event, Anthropic's ``message_start`` and ``message_delta`` usage.

Input tokens are every input token the call was billed for, cached or not, on every wire
(Anthropic reports cache reads and writes apart from ``input_tokens``; they are added in);
``cached_tokens`` is the part read from the provider's cache.
"""

from __future__ import annotations

import json
import re

from pydantic import BaseModel, ConfigDict

from prefect_agentenv.gateway.config import Wire
from prefect_agentenv.jsontypes import JsonObject, JsonValue

MAX_METERED_BODY_BYTES = 32 * 1024 * 1024
"""A whole (not streamed) answer is kept up to this size to read its usage; a larger one is relayed unread."""
_USAGE_OBJECT = re.compile(rb'"usage"\s*:\s*\{')
"""Once the first token is seen, only events holding a usage object are parsed (chat sends ``"usage": null``
in every chunk; the cost of parsing each would be paid per token)."""
_STREAM_ENDS = frozenset({"response.completed", "response.incomplete", "response.failed"})
_CLOSING_TYPE = re.compile(rb'"type"\s*:\s*"(?:%s)"' % b"|".join(
    re.escape(kind.encode()) for kind in sorted({*_STREAM_ENDS, "message_stop"})))
"""The event that closes a Responses API or Anthropic stream (no other event holds these types unescaped); a chat
stream's is ``data: [DONE]``."""


class CallUsage(BaseModel):
    """The model that answered and the tokens the upstream said the call used (None: it did not say)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None


def _int(value: JsonValue | None) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _object(value: JsonValue | None) -> JsonObject:
    return value if isinstance(value, dict) else {}


def _str(value: JsonValue | None) -> str | None:
    return value if isinstance(value, str) else None


def usage_of(wire: Wire, usage: JsonObject, model: str | None) -> CallUsage:
    """A wire's usage object in the gateway's terms (see the module docstring)."""
    if wire == "chat":
        cached = _int(_object(usage.get("prompt_tokens_details")).get("cached_tokens"))
        return CallUsage(model=model, input_tokens=_int(usage.get("prompt_tokens")),
                         output_tokens=_int(usage.get("completion_tokens")), cached_tokens=cached)
    if wire == "responses":
        cached = _int(_object(usage.get("input_tokens_details")).get("cached_tokens"))
        return CallUsage(model=model, input_tokens=_int(usage.get("input_tokens")),
                         output_tokens=_int(usage.get("output_tokens")), cached_tokens=cached)
    parts = [_int(usage.get(name)) for name in ("input_tokens", "cache_read_input_tokens",
                                                 "cache_creation_input_tokens")]
    known = [n for n in parts if n is not None]
    return CallUsage(model=model, input_tokens=sum(known) if known else None,
                     output_tokens=_int(usage.get("output_tokens")), cached_tokens=parts[1])


def body_usage(wire: Wire, body: bytes) -> CallUsage:
    """The usage of a whole JSON answer (nothing known when it is not JSON or has none)."""
    try:
        answer = json.loads(body)
    except ValueError:
        return CallUsage()
    if not isinstance(answer, dict):
        return CallUsage()
    usage = answer.get("usage")
    model = _str(answer.get("model"))
    return usage_of(wire, usage, model) if isinstance(usage, dict) else CallUsage(model=model)


class StreamMeter:
    """Reads one server-sent event stream as its chunks are relayed: the model, the first token, the usage."""

    def __init__(self, wire: Wire) -> None:
        self._wire = wire
        self._pending = bytearray()
        self._usage: JsonObject = {}
        self.model: str | None = None
        self.first_token = False
        """Set once an event carrying output (text, a tool call's name or arguments) has passed."""
        self.closed = False
        """Set once the stream's closing event has passed: the client has the whole answer, even if the upstream's
        connection has not ended yet."""

    def feed(self, chunk: bytes) -> bool:
        """Read the complete lines of ``chunk``; True when the first token arrived in it."""
        had_token = self.first_token
        self._pending += chunk
        end = self._pending.rfind(b"\n")
        if end < 0:
            return False
        lines = bytes(self._pending[:end]).split(b"\n")
        del self._pending[:end + 1]
        for line in lines:
            if not line.startswith(b"data:"):
                continue
            if not self.first_token or _USAGE_OBJECT.search(line):
                self._event(line[5:].strip())
            if not self.closed:
                self.closed = self._closes(line)
        return self.first_token and not had_token

    def _closes(self, line: bytes) -> bool:
        if self._wire == "chat":
            return line[5:].strip() == b"[DONE]"
        return _CLOSING_TYPE.search(line) is not None

    def usage(self) -> CallUsage:
        """What the stream said so far (the last usage seen wins; Anthropic's deltas add to its start)."""
        if not self._usage:
            return CallUsage(model=self.model)
        return usage_of(self._wire, self._usage, self.model)

    def _event(self, data: bytes) -> None:
        try:
            event = json.loads(data)
        except ValueError:
            return  # ``[DONE]``, or a line the client will judge for itself
        if isinstance(event, dict):
            {"chat": self._chat, "responses": self._responses, "messages": self._messages}[self._wire](event)

    def _chat(self, event: JsonObject) -> None:
        self.model = self.model or _str(event.get("model"))
        choices = event.get("choices")
        if not self.first_token and isinstance(choices, list) and choices:
            delta = _object(_object(choices[0]).get("delta"))
            self.first_token = any(delta.get(k) for k in ("content", "tool_calls", "reasoning_content", "refusal"))
        if isinstance(usage := event.get("usage"), dict):
            self._usage = usage

    def _responses(self, event: JsonObject) -> None:
        kind = _str(event.get("type")) or ""
        response = _object(event.get("response"))
        self.model = _str(response.get("model")) or self.model
        self.first_token = self.first_token or kind.endswith(".delta")
        if kind in _STREAM_ENDS and isinstance(usage := response.get("usage"), dict):
            self._usage = usage

    def _messages(self, event: JsonObject) -> None:
        kind = event.get("type")
        if kind == "message_start":
            message = _object(event.get("message"))
            self.model = _str(message.get("model")) or self.model
            self._usage = {**self._usage, **_object(message.get("usage"))}
        elif kind == "content_block_delta":
            self.first_token = True
        elif kind == "message_delta":
            known = {k: v for k, v in _object(event.get("usage")).items() if v is not None}
            self._usage = {**self._usage, **known}
