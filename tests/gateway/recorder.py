"""A tiny upstream of the tests' own, on loopback: it records the headers each request brought and
answers as the test sets it (a status with headers, a stream held at a gate, an endless stream)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

USAGE_ANSWER = {"id": "chatcmpl-rec", "object": "chat.completion", "model": "recorded-model",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15,
                          "prompt_tokens_details": {"cached_tokens": 8}}}


def sse(data: str) -> bytes:
    return f"data: {data}\n\n".encode()


FIRST_CHUNK = sse('{"id":"c","object":"chat.completion.chunk","model":"recorded-model","choices":'
                  '[{"index":0,"delta":{"role":"assistant","content":"first"}}]}')
LAST_CHUNKS = sse('{"id":"c","object":"chat.completion.chunk","model":"recorded-model","choices":[],'
                  '"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}') + sse("[DONE]")


@dataclass
class Recorder:
    """What the upstream received, and how it answers the next requests."""

    headers: list[dict[str, str]] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)
    status: int = 200
    answer_headers: dict[str, str] = field(default_factory=dict)
    answer: object = field(default_factory=lambda: USAGE_ANSWER)
    mode: str = "json"
    """``json``: ``answer`` with ``status``; ``gated``: one chunk, then the rest once ``gate`` is set;
    ``endless``: a chunk every 10 ms until the client goes; ``lingering``: the whole stream, then the connection
    held open until ``gate`` is set."""
    script: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    """Answers given before any other, one per request: an error status with its headers."""
    arrivals: list[float] = field(default_factory=list)
    """``time.monotonic()`` at each request."""
    gate: asyncio.Event = field(default_factory=asyncio.Event)
    chunks_sent: int = 0
    stream_closed: asyncio.Event = field(default_factory=asyncio.Event)

    async def requests_arrived(self, count: int, timeout: float = 10.0) -> None:
        """Return once ``count`` requests have arrived (TimeoutError after ``timeout`` seconds)."""
        async with asyncio.timeout(timeout):
            while len(self.bodies) < count:
                await asyncio.sleep(0.01)

    def app(self) -> Starlette:
        async def anything(request: Request) -> Response:
            self.arrivals.append(time.monotonic())
            self.headers.append({k.decode().lower(): v.decode() for k, v in request.headers.raw})
            self.bodies.append(await request.body())
            if self.script:
                status, headers = self.script.pop(0)
                return JSONResponse({"error": {"message": f"scripted {status}", "type": "server_error"}},
                                    status_code=status, headers=headers)
            if self.mode == "json":
                return JSONResponse(self.answer, status_code=self.status, headers=self.answer_headers)
            stream = {"gated": self._gated, "lingering": self._lingering}.get(self.mode, self._endless)()
            return StreamingResponse(stream, media_type="text/event-stream")

        return Starlette(routes=[Route("/{path:path}", anything, methods=["GET", "POST"])])

    async def _gated(self) -> AsyncIterator[bytes]:
        yield FIRST_CHUNK
        await self.gate.wait()
        yield LAST_CHUNKS

    async def _lingering(self) -> AsyncIterator[bytes]:
        yield FIRST_CHUNK + LAST_CHUNKS
        await self.gate.wait()

    async def _endless(self) -> AsyncIterator[bytes]:
        try:
            while True:
                self.chunks_sent += 1
                yield FIRST_CHUNK
                await asyncio.sleep(0.01)
        finally:
            self.stream_closed.set()
