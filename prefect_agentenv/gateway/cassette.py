"""Record and replay: a run's model traffic kept as a cassette, and answered from it without a provider.

A recording keeps, for each completion call relayed whole, what the client got: status, the few
response headers a client reads (content type, request id, ``Retry-After``), and the body (a
stream's SSE bytes, replayed event by event). Never a request header, so never a key or a token;
of the request only its wire, path, model and a hash.

Requests are matched by ``request_hash``: SHA-256 over the wire and the request body in canonical
JSON (keys sorted, no whitespace), without the top-level fields that name a caller or a
conversation rather than ask anything (``IGNORED_REQUEST_FIELDS``: a harness puts a fresh id
there on every run, and a replay must still match). Every other byte counts, the prompt's
included, but for the random token a rubric judge's prompt fences the agent's words with (a fresh
one each time). The same request asked n times gets the n recorded answers in order, then the last one
again.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections import deque
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field

from prefect_agentenv.gateway.config import Wire

IGNORED_REQUEST_FIELDS = frozenset({"metadata", "user", "prompt_cache_key", "safety_identifier"})
"""Per-caller identifiers, left out of the hash (Anthropic's ``metadata.user_id``, OpenAI's ``user``,
``safety_identifier`` and the Responses API's ``prompt_cache_key``)."""
KEPT_RESPONSE_HEADERS = frozenset({"content-type", "request-id", "x-request-id", "retry-after"})
"""The response headers a cassette keeps: what clients read. Nothing else (and no request header)."""


_FENCE = re.compile(r"UNTRUSTED [A-Z][A-Z_]* ([0-9a-f]{16})>>>")
"""The delimiters a rubric judge's prompt fences the agent's words with: a fresh random token each
time (so the agent cannot close the fence), which a replay of the judge's request must not see."""


def _without_fence_tokens(text: str) -> str:
    """``text`` with every judge fence token (wherever it appears) replaced by the same placeholder."""
    for token in set(_FENCE.findall(text)):
        text = text.replace(token, "<fence>")
    return text


def request_hash(wire: Wire, body: bytes) -> str:
    """``sha256:<hex>`` of the wire and the request body in canonical form (see the module docstring);
    a body that is not a JSON object is hashed as it came."""
    try:
        request = json.loads(body)
    except ValueError:
        request = None
    if isinstance(request, dict):
        kept = {key: value for key, value in request.items() if key not in IGNORED_REQUEST_FIELDS}
        text = json.dumps(kept, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        canonical = _without_fence_tokens(text).encode()
    else:
        canonical = body
    return "sha256:" + hashlib.sha256(wire.encode() + b"\n" + canonical).hexdigest()


class CassetteEntry(BaseModel):
    """One recorded call: the request it answers and the answer, byte for byte."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    wire: Wire
    path: str
    """The path the client called."""
    model: str | None
    """The request's ``model``."""
    request_hash: str
    """See ``request_hash``."""
    status: int
    headers: list[tuple[str, str]]
    """The response headers in ``KEPT_RESPONSE_HEADERS``, in the upstream's order."""
    streamed: bool
    body: str
    """The answer's bytes: UTF-8 text, or base64 when they are not valid UTF-8 (``body_encoding``)."""
    body_encoding: Literal["utf-8", "base64"] = "utf-8"
    run_id: str | None = None
    """The run that made the call, for reading (not matched on)."""
    role: str | None = None

    @classmethod
    def of(cls, *, wire: Wire, path: str, model: str | None, request_hash: str, status: int,
           headers: list[tuple[str, str]], body: bytes, run_id: str | None = None,
           role: str | None = None) -> CassetteEntry:
        """An entry for an answer, keeping only the headers that matter and the body as text when it is."""
        kept = [(name.lower(), value) for name, value in headers if name.lower() in KEPT_RESPONSE_HEADERS]
        streamed = any(n == "content-type" and v.startswith("text/event-stream") for n, v in kept)
        encoding: Literal["utf-8", "base64"]
        try:
            text, encoding = body.decode("utf-8"), "utf-8"
        except UnicodeDecodeError:
            text, encoding = base64.b64encode(body).decode("ascii"), "base64"
        return cls(wire=wire, path=path, model=model, request_hash=request_hash, status=status, headers=kept,
                   streamed=streamed, body=text, body_encoding=encoding, run_id=run_id, role=role)

    def body_bytes(self) -> bytes:
        return base64.b64decode(self.body) if self.body_encoding == "base64" else self.body.encode("utf-8")

    def chunks(self) -> list[bytes]:
        """The answer as it is replayed: a stream event by event (each with its blank line), else whole."""
        body = self.body_bytes()
        if not self.streamed:
            return [body]
        chunks, start = [], 0
        while (end := body.find(b"\n\n", start)) >= 0:
            chunks.append(body[start:end + 2])
            start = end + 2
        return chunks + ([body[start:]] if start < len(body) else [])


class Cassette(BaseModel):
    """A run's recorded model calls, in the order they ended; JSON lines on disk (one entry a line)."""

    model_config = ConfigDict(extra="forbid")

    entries: list[CassetteEntry] = Field(default_factory=list)

    def add(self, entry: CassetteEntry) -> None:
        self.entries.append(entry)

    def for_run(self, run_id: str) -> Cassette:
        """The calls one run made (a gateway shared by several runs records them all into one cassette)."""
        return Cassette(entries=[entry for entry in self.entries if entry.run_id == run_id])

    def to_jsonl(self) -> str:
        return "".join(entry.model_dump_json() + "\n" for entry in self.entries)

    @classmethod
    def from_jsonl(cls, text: str) -> Cassette:
        return cls(entries=[CassetteEntry.model_validate_json(line) for line in text.splitlines() if line.strip()])

    def write(self, path: Path) -> None:
        path.write_text(self.to_jsonl(), encoding="utf-8")

    @classmethod
    def read(cls, path: Path) -> Cassette:
        return cls.from_jsonl(path.read_text(encoding="utf-8"))


class _ReplayStream(httpx.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk


class Player:
    """Answers requests from a cassette, as an upstream would (see the module docstring for the matching)."""

    def __init__(self, cassette: Cassette) -> None:
        self._queues: dict[tuple[Wire, str], deque[CassetteEntry]] = {}
        self._last: dict[tuple[Wire, str], CassetteEntry] = {}
        for entry in cassette.entries:
            self._queues.setdefault((entry.wire, entry.request_hash), deque()).append(entry)

    def __repr__(self) -> str:
        return f"Player({len(self._queues)} distinct requests)"

    def answer(self, wire: Wire, digest: str) -> httpx.Response | None:
        """The recorded answer to the request, as an upstream response to relay; None when never recorded."""
        key = (wire, digest)
        queue = self._queues.get(key)
        entry = queue.popleft() if queue else self._last.get(key)
        if entry is None:
            return None
        self._last[key] = entry
        return httpx.Response(entry.status, headers=entry.headers, stream=_ReplayStream(entry.chunks()))
