"""One upstream answer relayed to the client chunk by chunk, metered on the way, recorded at its end.

An ASGI response of its own rather than Starlette's ``StreamingResponse``: the relay must stop
pulling from the upstream the moment the client goes away (a provider bills a stream nobody
reads), and its record must be written when the call ends, however it ends. Under uvicorn's
ASGI 2.3 a send to a gone client is silently dropped, so the relay listens for the disconnect
beside the stream, and the upstream's response is closed in a ``finally`` shielded from that
cancellation.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import anyio
import httpx
from starlette.types import Message, Receive, Scope, Send

from prefect_agentenv.gateway.config import Wire
from prefect_agentenv.gateway.ledger import CallRecord, Failure, LimitName
from prefect_agentenv.gateway.metering import MAX_METERED_BODY_BYTES, CallUsage, StreamMeter, body_usage
from prefect_agentenv.gateway.retries import failure_of
from prefect_agentenv.gateway.tokens import Grant

_DROPPED_RESPONSE_HEADERS = frozenset({
    b"connection", b"keep-alive", b"proxy-authenticate", b"proxy-authorization", b"te", b"trailer", b"trailers",
    b"transfer-encoding", b"upgrade", b"content-length", b"date", b"server"})
"""Hop-by-hop headers, and those the gateway's own server writes (length: the body is relayed chunked)."""


@dataclass(frozen=True)
class CallStart:
    """What is known of a call before its answer: who, which wire and path, what was asked, when."""

    grant: Grant
    wire: Wire
    path: str
    requested_model: str | None
    started_at: datetime
    started: float
    """``time.perf_counter()`` at the request's arrival."""
    retries: int = 0
    """Times the call was sent again before an answer was relayed."""

    def record(self, *, status: int, usage: CallUsage, streamed: bool, first_byte: float | None = None,
               first_token: float | None = None, error: str | None = None, failure: Failure | None = None,
               limit: LimitName | None = None) -> CallRecord:
        """The call's record, with its times measured from the request's arrival."""
        return CallRecord(
            run_id=self.grant.run_id, role=self.grant.role, wire=self.wire, path=self.path,
            requested_model=self.requested_model, model=usage.model or self.requested_model, streamed=streamed,
            status=status, input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
            cached_tokens=usage.cached_tokens, started_at=self.started_at,
            latency_seconds=time.perf_counter() - self.started, first_byte_seconds=self._since(first_byte),
            first_token_seconds=self._since(first_token), error=error, failure=failure, limit=limit,
            retries=self.retries)

    def _since(self, moment: float | None) -> float | None:
        return None if moment is None else moment - self.started


def client_headers(upstream: httpx.Response) -> list[tuple[bytes, bytes]]:
    """The upstream's response headers as the client gets them (hop-by-hop ones dropped)."""
    return [(name, value) for name, value in upstream.headers.raw if name.lower() not in _DROPPED_RESPONSE_HEADERS]


Taped = Callable[[httpx.Response, bytes], None]
"""Given an answer relayed to its end and its bytes: how a recording gateway keeps it."""


class Relay:
    """The ASGI response that relays one upstream answer, then hands its record to ``done``
    (and, when recording, the whole answer to ``taped``)."""

    def __init__(self, upstream: httpx.Response, call: CallStart, done: Callable[[CallRecord], None],
                 taped: Taped | None = None) -> None:
        self._upstream, self._call, self._done, self._taped = upstream, call, done, taped
        self._tape = bytearray() if taped is not None else None
        content_type = upstream.headers.get("content-type", "")
        self._streamed = content_type.startswith("text/event-stream")
        self._meter = StreamMeter(call.wire) if self._streamed else None
        self._body = bytearray()
        self._first_byte: float | None = None
        self._first_token: float | None = None
        self._error: str | None = None
        self._failure: Failure | None = None
        self._complete = False
        """The upstream's answer has been relayed to its end (uvicorn reports a disconnect after that too)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async with anyio.create_task_group() as group:
            async def relay_then_stop() -> None:
                await self._relay(send)
                group.cancel_scope.cancel()

            group.start_soon(relay_then_stop)
            await _disconnected(receive)
            # A client may hang up once it has read the stream's closing event, before the upstream's end.
            answered = self._complete or (self._meter is not None and self._meter.closed)
            if not answered and self._error is None:
                self._error, self._failure = "the client went away before the answer ended", "client"
            group.cancel_scope.cancel()

    async def _relay(self, send: Send) -> None:
        upstream = self._upstream
        try:
            await send({"type": "http.response.start", "status": upstream.status_code,
                        "headers": client_headers(upstream)})
            async for chunk in upstream.aiter_raw():
                self._read(chunk)
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            self._complete = True
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except httpx.HTTPError as exc:
            self._error = f"the upstream's answer broke off: {type(exc).__name__}"
            self._failure = "infrastructure"
        finally:
            with anyio.CancelScope(shield=True):
                await upstream.aclose()
            if self._taped is not None and self._tape is not None and self._complete:
                self._taped(upstream, bytes(self._tape))
            self._done(self._record())

    def _read(self, chunk: bytes) -> None:
        now = time.perf_counter()
        if self._first_byte is None:
            self._first_byte = now
        if self._tape is not None:
            self._tape += chunk
        if self._meter is not None:
            if self._meter.feed(chunk):
                self._first_token = now
        elif len(self._body) + len(chunk) <= MAX_METERED_BODY_BYTES:
            self._body += chunk

    def _record(self) -> CallRecord:
        if self._meter is not None:
            usage = self._meter.usage()
        else:
            usage = body_usage(self._call.wire, bytes(self._body)) if self._body else CallUsage()
        status = self._upstream.status_code
        return self._call.record(status=status, usage=usage, streamed=self._streamed,
                                 first_byte=self._first_byte, first_token=self._first_token, error=self._error,
                                 failure=self._failure or failure_of(status))


async def _disconnected(receive: Receive) -> None:
    """Return when the client has gone (uvicorn says so once the response is complete, too)."""
    while True:
        message: Message = await receive()
        if message["type"] == "http.disconnect":
            return
