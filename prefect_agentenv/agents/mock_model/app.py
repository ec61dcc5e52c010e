"""The mock model's HTTP server: an OpenAI-compatible API plus ``/mock/*`` control routes."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections import deque
from collections.abc import Sequence
from typing import TypedDict

import uvicorn
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.agents.mock_model.rules import (
    MOCK_MODEL_NAME,
    MockAnswer,
    ScriptedReply,
    default_answer,
    parse_script,
    scripted_answer,
    usage_for,
)

logger = logging.getLogger(__name__)

MODULE = "prefect_agentenv.agents.mock_model"
GRACEFUL_SHUTDOWN_SECONDS = 2
"""A scripted delay may hold a request open; stopping the server must not wait for it."""


class LoggedRequest(TypedDict):
    """One entry of ``/mock/requests``: the route, whether a key was sent (never the key), the body."""

    path: str
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
        return JSONResponse({"object": "list", "data": [
            {"id": MOCK_MODEL_NAME, "object": "model", "created": 0, "owned_by": "prefect-agentenv"}]})

    async def chat_completions(request: Request) -> JSONResponse:
        try:
            body = json.loads(await request.body())
        except ValueError:
            return _error(400, "the request body is not JSON")
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return _error(400, "the request needs a 'messages' list")
        state.requests.append({"path": request.url.path,
                               "has_authorization": "authorization" in request.headers, "body": body})
        state.in_flight += 1
        try:
            answer = await _answer(state, body)
        finally:
            state.in_flight -= 1
        if isinstance(answer, JSONResponse):
            return answer
        state.completions += 1
        return JSONResponse(_completion(body, answer, state.completions))

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
        Route("/v1/models", models, methods=["GET"]),
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        Route("/chat/completions", chat_completions, methods=["POST"]),
        Route("/mock/script", script, methods=["POST"]),
        Route("/mock/requests", requests_log, methods=["GET"]),
        Route("/mock/reset", reset, methods=["POST"]),
    ])


async def _answer(state: MockModelState, body: JsonObject) -> MockAnswer | JSONResponse:
    """The next scripted reply (after its delay; an error reply as the error response), else the default answer."""
    if not state.script:
        return default_answer(body)
    reply = state.script.popleft()
    if reply.delay_seconds:
        await asyncio.sleep(reply.delay_seconds)
    if reply.error is not None:
        return _error(reply.error.status, reply.error.message)
    return scripted_answer(reply, body)


def _completion(body: JsonObject, answer: MockAnswer, number: int) -> JsonObject:
    message: JsonObject = {"role": "assistant", "content": answer.content}
    if answer.tool_calls:
        message["tool_calls"] = [{"id": call.id, "type": "function",
                                  "function": {"name": call.name, "arguments": call.arguments_text()}}
                                 for call in answer.tool_calls]
    return {
        "id": f"mockcmpl-{number}",
        "object": "chat.completion",
        "created": 0,
        "model": MOCK_MODEL_NAME,
        "system_fingerprint": f"mock:{answer.rule}",
        "choices": [{"index": 0, "message": message, "finish_reason": answer.finish_reason}],
        "usage": dict(usage_for(body, answer)),
    }


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": "mock_error", "code": status}}, status_code=status)


def mock_model_command(python: str = sys.executable) -> list[str]:
    """argv template of the mock model server; a launcher fills in ``{host}`` and ``{port}``."""
    return [python, "-m", MODULE, "--host", "{host}", "--port", "{port}"]


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m prefect_agentenv.agents.mock_model --host 127.0.0.1 --port 8400``."""
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}",
                                     description="Serve the deterministic mock model (OpenAI-compatible).")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8400, help="port to bind (default: 8400)")
    parser.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    args = parser.parse_args(argv)
    print(f"mock model on http://{args.host}:{args.port}/v1 (control routes under /mock)",
          file=sys.stderr, flush=True)
    uvicorn.run(build_app(), host=args.host, port=args.port, log_level=args.log_level,
                timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS)
