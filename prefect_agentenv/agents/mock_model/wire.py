"""What every API module gives the server: how to read a request and write an answer, whole or streamed."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

from prefect_agentenv.agents.mock_model.conversation import Conversation, MockAnswer, Usage, usage_for
from prefect_agentenv.jsontypes import JsonObject, JsonValue

DELTA_CHARS = 16
"""A streamed text or argument string is sent in pieces of this many characters, so a client's
joining of deltas is exercised as a real model's stream would exercise it."""


class WireError(ValueError):
    """A request the API cannot read (400), or an answer it cannot be given in (500)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class ServerEvent(NamedTuple):
    """One server-sent event: ``data`` (JSON, or a literal such as ``[DONE]``) under an optional name."""

    data: JsonObject | str
    event: str | None = None

    def encode(self) -> bytes:
        data = self.data if isinstance(self.data, str) else json.dumps(self.data, separators=(",", ":"))
        head = f"event: {self.event}\n" if self.event else ""
        return f"{head}data: {data}\n\n".encode()


@dataclass(frozen=True)
class Exchange:
    """One answered request, as an API module renders it."""

    body: JsonObject
    conversation: Conversation
    answer: MockAnswer
    number: int
    """The server's count of answers so far, this one included: ids are made from it."""

    @cached_property
    def usage(self) -> Usage:
        return usage_for(self.conversation, self.answer)


@dataclass(frozen=True)
class WireApi:
    """One API the mock speaks."""

    name: str
    read: Callable[[JsonObject], Conversation]
    """The request as a conversation; raises :class:`WireError` when it cannot be read."""
    reply: Callable[[Exchange], JsonObject]
    """The whole answer, for a request without ``"stream": true``."""
    events: Callable[[Exchange], list[ServerEvent]]
    """The answer as the events of a stream."""
    error_body: Callable[[int, str], JsonObject]
    """An error in the API's shape."""


def pieces(text: str, size: int = DELTA_CHARS) -> list[str]:
    """``text`` cut into deltas (none for an empty text)."""
    return [text[i:i + size] for i in range(0, len(text), size)]


def as_int(value: JsonValue) -> int | None:
    """An integer field, or None (a bool is not a count)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None
