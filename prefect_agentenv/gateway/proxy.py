"""The gateway's routes: check the caller's token, swap it for the wire's real key, relay the call.

Every route answers bare and under any base path (``/v1``, ``/openai/v1``), as the mock model's
do, since each harness appends its own path to the base URL it is given. Nothing is translated
between wires: a wire with no upstream is refused with an error that names it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from prefect_agentenv.gateway.cassette import Cassette, CassetteEntry, Player, request_hash
from prefect_agentenv.gateway.config import GatewayConfig, Upstream, Wire
from prefect_agentenv.gateway.errors import error_response, limit_refusal, models_wire, replay_miss
from prefect_agentenv.gateway.hold import ModelHold
from prefect_agentenv.gateway.ledger import CallLedger, CallRecord, priced
from prefect_agentenv.gateway.limits import LimitBook
from prefect_agentenv.gateway.metering import CallUsage
from prefect_agentenv.gateway.relay import CallStart, Relay, Taped
from prefect_agentenv.gateway.retries import Slots, send
from prefect_agentenv.gateway.tokens import Grant, TokenRegistry

_DROPPED_REQUEST_HEADERS = frozenset({
    b"host", b"connection", b"keep-alive", b"proxy-authenticate", b"proxy-authorization", b"te", b"trailer",
    b"transfer-encoding", b"upgrade", b"content-length", b"accept-encoding", b"authorization", b"x-api-key"})
"""Hop-by-hop headers, the client's token (either header) and its encodings: the gateway asks for the
answer unencoded, so that it can read the usage in it."""
_COMPLETIONS: tuple[tuple[Wire, str], ...] = (
    ("chat", "/chat/completions"), ("responses", "/responses"), ("messages", "/messages"))

Endpoint = Callable[[Request], Awaitable[Response | Relay]]
"""A route's handler: Starlette runs whatever ASGI response it returns, the relay included."""


@dataclass(frozen=True)
class GatewayState:
    """What the routes share: the upstreams, the live tokens, the ledger, the limits, the one upstream
    client and its slots; and the cassette being recorded, or the player answering instead of upstreams."""

    config: GatewayConfig
    tokens: TokenRegistry
    ledger: CallLedger
    http: httpx.AsyncClient
    limits: LimitBook = field(default_factory=LimitBook)
    slots: Slots = field(default_factory=Slots)
    recording: Cassette | None = None
    player: Player | None = None
    hold: ModelHold | None = None
    """Holds agents' new calls while set (a benchmark paused with ``--now``)."""

    def record(self, record: CallRecord, config: GatewayConfig | None = None) -> None:
        """Price an ended call, count it against its run's limits and budget, and keep it."""
        config = config or self.config
        record = priced(record, config.prices)
        self.limits.count(record)
        self.slots.count(config.upstream(record.wire), (record.input_tokens or 0) + (record.output_tokens or 0))
        self.ledger.add(record)

    def config_for(self, grant: Grant) -> GatewayConfig:
        """The upstreams a token's calls go to: its own, else the gateway's."""
        return grant.upstreams or self.config


def build_app(state: GatewayState) -> Starlette:
    """The gateway as an ASGI app."""
    routes: list[Route] = []
    for wire, path in _COMPLETIONS:
        routes += _routes(path, _completions(state, wire, path), "POST")
    routes += _routes("/models", _models(state, "/models"), "GET")
    routes += _routes("/models/{model_id}", _models(state, None), "GET")
    return Starlette(routes=routes)


def _routes(path: str, endpoint: Endpoint, method: str) -> list[Route]:
    return [Route(path, endpoint, methods=[method]), Route("/{prefix:path}" + path, endpoint, methods=[method])]


def _completions(state: GatewayState, wire: Wire, suffix: str) -> Endpoint:
    """One wire's completion route: authorize, look up the upstream, relay and record."""

    async def endpoint(request: Request) -> Response | Relay:
        started, started_at = time.perf_counter(), datetime.now(UTC)
        grant = _grant(state.tokens, request)
        if grant is None:
            return _unauthorized(wire)
        body = await request.body()
        if state.hold is not None and grant.role == "agent":  # before the limits: counted when it goes
            if not await state.hold.wait(request.is_disconnected):
                return Response(status_code=499)  # the agent went away while held: nothing to send
            started, started_at = time.perf_counter(), datetime.now(UTC)
        call = CallStart(grant=grant, wire=wire, path=request.url.path, requested_model=_model_of(body),
                         started_at=started_at, started=started)
        config = state.config_for(grant)
        upstream = config.upstream(wire)
        if upstream is None and state.player is None:
            state.record(call.record(status=404, usage=CallUsage(), streamed=False, error="no upstream for this wire",
                                     failure="configuration"), config)
            return _unconfigured(wire)
        reached = state.limits.admit(grant.run_id)
        if reached is not None:
            refusal = limit_refusal(wire, reached)
            state.record(call.record(status=refusal.status_code, usage=CallUsage(), streamed=False,
                                     error=f"refused: the {reached} limit was reached", failure="limit",
                                     limit=reached), config)
            return refusal
        if state.player is not None:
            return _replay(state, state.player, body, call, config)
        assert upstream is not None  # checked above: only a replay answers without one
        return await _forward(state, config, upstream, request, body, suffix, call)

    return endpoint


def _models(state: GatewayState, suffix: str | None) -> Endpoint:
    """``GET /v1/models`` (and one model) passed through to the upstream of the wire the client speaks."""

    async def endpoint(request: Request) -> Response:
        grant = _grant(state.tokens, request)
        config = state.config if grant is None else state.config_for(grant)
        wire = models_wire(request.headers, config)
        if grant is None:
            return _unauthorized(wire)
        upstream = config.upstream(wire)
        if upstream is None:
            return _unconfigured(wire)
        path = suffix or "/models/" + request.path_params["model_id"]
        try:
            answer = await state.http.send(_upstream_request(state.http, upstream, request, b"", path))
        except httpx.HTTPError as exc:
            return _unreachable(wire, upstream, exc)
        return Response(answer.content, status_code=answer.status_code,
                        headers={k: v for k, v in answer.headers.items() if k.lower() == "content-type"})

    return endpoint


async def _forward(state: GatewayState, config: GatewayConfig, upstream: Upstream, request: Request, body: bytes,
                   suffix: str, call: CallStart) -> Response | Relay:
    """Send the call on with the real key, retrying the provider's rate limits and outages; relay the
    answer as it arrives (or say why there was none)."""
    sent = await send(state.http, upstream, lambda: _upstream_request(state.http, upstream, request, body, suffix),
                      state.slots)
    call = dataclasses.replace(call, retries=sent.retries)
    if sent.response is None:
        error = sent.error or httpx.TransportError("no answer")
        state.record(call.record(status=502, usage=CallUsage(), streamed=False, failure="infrastructure",
                                 error=f"the upstream did not answer: {type(error).__name__}"), config)
        return _unreachable(call.wire, upstream, error)

    def done(record: CallRecord) -> None:
        sent.release()
        state.record(record, config)

    return Relay(sent.response, call, done, _taper(state.recording, call, body))


def _replay(state: GatewayState, player: Player, body: bytes, call: CallStart, config: GatewayConfig) -> Response | Relay:
    """Answer from the cassette, relayed and counted like an upstream's answer; a request never recorded
    is refused with its model and hash, so the new request can be found."""
    digest = request_hash(call.wire, body)
    answer = player.answer(call.wire, digest)
    if answer is None:
        refusal = replay_miss(call.wire, call.requested_model, digest)
        state.record(call.record(status=refusal.status_code, usage=CallUsage(), streamed=False, failure="replay",
                                 error=f"not in the cassette: {digest}"), config)
        return refusal
    return Relay(answer, call, functools.partial(state.record, config=config), _taper(state.recording, call, body))


def _taper(cassette: Cassette | None, call: CallStart, body: bytes) -> Taped | None:
    """What keeps a relayed answer in ``cassette`` (nothing when the gateway does not record)."""
    if cassette is None:
        return None

    def taped(answer: httpx.Response, content: bytes) -> None:
        cassette.add(CassetteEntry.of(
            wire=call.wire, path=call.path, model=call.requested_model, request_hash=request_hash(call.wire, body),
            status=answer.status_code, headers=[(k, v) for k, v in answer.headers.multi_items()], body=content,
            run_id=call.grant.run_id, role=call.grant.role))

    return taped


def _upstream_request(http: httpx.AsyncClient, upstream: Upstream, request: Request, body: bytes,
                      suffix: str) -> httpx.Request:
    """The client's request addressed to the upstream: its headers but its token, the real key instead."""
    headers = [(name, value) for name, value in request.headers.raw if name.lower() not in _DROPPED_REQUEST_HEADERS]
    headers += [(name.encode(), value.encode()) for name, value in upstream.auth_headers().items()]
    headers.append((b"accept-encoding", b"identity"))
    if upstream.auth == "x-api-key" and "anthropic-version" not in request.headers:
        headers.append((b"anthropic-version", upstream.anthropic_version.encode()))
    query = request.url.query
    url = upstream.base_url + suffix + (f"?{query}" if query else "")
    return http.build_request(request.method, url, headers=headers, content=body,
                              timeout=httpx.Timeout(upstream.timeout_seconds))


def _grant(tokens: TokenRegistry, request: Request) -> Grant | None:
    """Whom the request's token (bearer or ``x-api-key``: the SDKs differ) was issued to."""
    bearer = request.headers.get("authorization", "")
    if bearer[:7].lower() == "bearer ":
        found = tokens.grant(bearer[7:].strip())
        if found is not None:
            return found
    key = request.headers.get("x-api-key")
    return tokens.grant(key.strip()) if key else None


def _model_of(body: bytes) -> str | None:
    """The request's ``model``; None when the body is not a JSON object (the upstream will say why)."""
    try:
        request = json.loads(body)
    except ValueError:
        return None
    model = request.get("model") if isinstance(request, dict) else None
    return model if isinstance(model, str) else None


def _unauthorized(wire: Wire) -> JSONResponse:
    return error_response(wire, 401, "authentication_error",
                          "the model gateway does not know this token (never issued, or revoked): send the "
                          "token the run was given, as 'Authorization: Bearer <token>' or 'x-api-key: <token>'")


def _unconfigured(wire: Wire) -> JSONResponse:
    return error_response(wire, 404, "not_found_error",
                          f"the model gateway has no upstream for the {wire!r} wire ({_WIRE_NAMES[wire]}): "
                          f"configure GatewayConfig.{wire}")


def _unreachable(wire: Wire, upstream: Upstream, exc: httpx.HTTPError) -> JSONResponse:
    return error_response(wire, 502, "api_error",
                          f"the model gateway could not reach the {wire!r} upstream at {upstream.base_url}: "
                          f"{type(exc).__name__}")


_WIRE_NAMES: dict[Wire, str] = {"chat": "OpenAI chat completions", "responses": "the OpenAI Responses API",
                                "messages": "the Anthropic Messages API"}
