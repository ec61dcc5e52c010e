"""The mock model's HTTP server: chat completions, Responses and Anthropic Messages, plus ``/mock/*`` control routes."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TypedDict

import uvicorn
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from prefect_agentenv.agents.mock_model.chat import CHAT
from prefect_agentenv.agents.mock_model.conversation import MOCK_MODEL_NAME, Conversation, MockAnswer
from prefect_agentenv.agents.mock_model.messages import MESSAGES, count_tokens
from prefect_agentenv.agents.mock_model.responses import RESPONSES
from prefect_agentenv.agents.mock_model.rules import (
    ScriptedError,
    ScriptedReply,
    default_answer,
    parse_script,
    scripted_answer,
)
from prefect_agentenv.agents.mock_model.wire import Exchange, ServerEvent, WireApi, WireError
from prefect_agentenv.jsontypes import JsonObject

logger = logging.getLogger(__name__)

MODULE = "prefect_agentenv.agents.mock_model"
GRACEFUL_SHUTDOWN_SECONDS = 2
"""A scripted delay may hold a request open; stopping the server must not wait for it."""
RULE_HEADER = "x-mock-rule"
"""Every answer names the rule (or ``script``) that produced it in this response header."""
_MODEL_CARD: JsonObject = {"id": MOCK_MODEL_NAME, "object": "model", "created": 0, "owned_by": "prefect-agentenv",
                           "type": "model", "display_name": MOCK_MODEL_NAME, "created_at": "1970-01-01T00:00:00Z"}
"""The one model, described for OpenAI clients and Anthropic ones alike."""


class LoggedRequest(TypedDict):
    """One entry of ``/mock/requests``: the route, the API, whether a key was sent (never the key), the body."""

    path: str
    api: str
    has_authorization: bool
    body: JsonObject


class MockModelState:
    """The script queue and the log of requests, for one server."""

    def __init__(self) -> None:
        self.script: deque[ScriptedReply] = deque()
        self.requests: list[LoggedRequest] = []
        self.completions = 0
        self.in_flight = 0
        """Completions being answered now (a scripted delay holds one open)."""

    def reset(self) -> None:
        self.script.clear()
        self.requests.clear()
        self.completions = 0


def build_app(state: MockModelState | None = None) -> Starlette:
    """The mock model as an ASGI app (see the package docstring for its behaviour)."""
    state = state or MockModelState()

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "model": MOCK_MODEL_NAME})

    async def models(request: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [_MODEL_CARD], "has_more": False,
                             "first_id": MOCK_MODEL_NAME, "last_id": MOCK_MODEL_NAME})

    async def model(request: Request) -> JSONResponse:
        return JSONResponse(_MODEL_CARD)

    async def tokens(request: Request) -> JSONResponse:
        body = await _body(request, MESSAGES)
        if isinstance(body, JSONResponse):
            return body
        try:
            return JSONResponse(count_tokens(body))
        except WireError as exc:
            return _error(MESSAGES, exc.status, str(exc))

    async def script(request: Request) -> JSONResponse:
        try:
            payload = json.loads(await request.body())
            replies = parse_script(payload["replies"])
        except (ValueError, KeyError, TypeError) as exc:
            detail = exc.errors(include_url=False) if isinstance(exc, ValidationError) else str(exc)
            return JSONResponse({"error": "expected {\"replies\": [reply, ...]}", "detail": detail},
                                status_code=400)
        state.script.extend(replies)
        return JSONResponse({"queued": len(state.script)})

    async def requests_log(request: Request) -> JSONResponse:
        return JSONResponse({"requests": state.requests, "queued": len(state.script)})

    async def reset(request: Request) -> JSONResponse:
        state.reset()
        return JSONResponse({"queued": 0})

    return Starlette(routes=[
        Route("/health", health, methods=["GET"]),
        Route("/mock/script", script, methods=["POST"]),
        Route("/mock/requests", requests_log, methods=["GET"]),
        Route("/mock/reset", reset, methods=["POST"]),
        *_api_routes("/models", models, "GET"),
        *_api_routes("/models/{model_id}", model, "GET"),
        *_api_routes("/messages/count_tokens", tokens, "POST"),
        *(route for api, path in ((CHAT, "/chat/completions"), (RESPONSES, "/responses"), (MESSAGES, "/messages"))
          for route in _api_routes(path, _completions(state, api), "POST")),
    ])


def _api_routes(path: str, endpoint: Callable[[Request], Awaitable[Response]], method: str) -> list[Route]:
    """``path`` bare and under any base path (``/v1``, ``/openai/v1``, ...): each client picks its own."""
    return [Route(path, endpoint, methods=[method]), Route("/{prefix:path}" + path, endpoint, methods=[method])]


def _completions(state: MockModelState, api: WireApi) -> Callable[[Request], Awaitable[Response]]:
    """The endpoint of one API: read the request, log it, answer (script first), write it whole or streamed."""

    async def endpoint(request: Request) -> Response:
        body = await _body(request, api)
        if isinstance(body, JSONResponse):
            return body
        try:
            conversation = api.read(body)
        except WireError as exc:
            return _error(api, exc.status, str(exc))
        authorized = "authorization" in request.headers or "x-api-key" in request.headers
        state.requests.append({"path": request.url.path, "api": api.name, "has_authorization": authorized,
                               "body": body})
        state.in_flight += 1
        try:
            answer = await _answer(state, conversation)
        finally:
            state.in_flight -= 1
        if isinstance(answer, ScriptedError):
            return _error(api, answer.status, answer.message)
        state.completions += 1
        return _render(api, Exchange(body=body, conversation=conversation, answer=answer, number=state.completions))

    return endpoint


async def _body(request: Request, api: WireApi) -> JsonObject | JSONResponse:
    try:
        body = json.loads(await request.body())
    except ValueError:
        return _error(api, 400, "the request body is not JSON")
    return body if isinstance(body, dict) else _error(api, 400, "the request body must be a JSON object")


async def _answer(state: MockModelState, conversation: Conversation) -> MockAnswer | ScriptedError:
    """The next scripted reply (after its delay; an error reply as the error), else the default answer."""
    if not state.script:
        return default_answer(conversation)
    reply = state.script.popleft()
    if reply.delay_seconds:
        await asyncio.sleep(reply.delay_seconds)
    return reply.error if reply.error is not None else scripted_answer(reply, conversation)


def _render(api: WireApi, exchange: Exchange) -> Response:
    """The answer whole, or as a server-sent event stream when the request asked for one."""
    headers = {RULE_HEADER: exchange.answer.rule}
    try:
        if exchange.body.get("stream") is True:
            stream = api.events(exchange)
            return StreamingResponse(_sent(stream), media_type="text/event-stream",
                                     headers={**headers, "cache-control": "no-cache"})
        return JSONResponse(api.reply(exchange), headers=headers)
    except WireError as exc:
        return _error(api, exc.status, str(exc))


async def _sent(events: list[ServerEvent]) -> AsyncIterator[bytes]:
    for event in events:
        yield event.encode()


def _error(api: WireApi, status: int, message: str) -> JSONResponse:
    return JSONResponse(api.error_body(status, message), status_code=status)


def mock_model_command(python: str = sys.executable) -> list[str]:
    """argv template of the mock model server; a launcher fills in ``{host}`` and ``{port}``."""
    return [python, "-m", MODULE, "--host", "{host}", "--port", "{port}"]


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m prefect_agentenv.agents.mock_model --host 127.0.0.1 --port 8400``."""
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}",
                                     description="Serve the deterministic mock model (OpenAI- and Anthropic-compatible).")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8400, help="port to bind (default: 8400)")
    parser.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    args = parser.parse_args(argv)
    print(f"mock model on http://{args.host}:{args.port}/v1 (control routes under /mock)",
          file=sys.stderr, flush=True)
    uvicorn.run(build_app(), host=args.host, port=args.port, log_level=args.log_level,
                timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS)
