"""A hand-written MCP server that behaves like an mcp 1.x streamable-HTTP server.

mcp 1.x cannot be installed next to mcp 2.x in our venv; a genuine 1.x server runs from the peers'
venv in ``tests/conformance/``. This one stays for the unit tests because it logs what it receives.
It reproduces what a 1.x server does on the wire (stateful mode, SSE answers), which is all a
client negotiates against:

* only ``initialize`` is accepted without an ``mcp-session-id``; anything else — such as the
  2026-era ``server/discover`` probe — gets HTTP 400 with a JSON-RPC error body;
* an ``MCP-Protocol-Version`` header it does not know gets HTTP 400;
* ``initialize`` answers with the client's version if supported, else its own latest
  (``2025-03-26`` here: an early 1.x server), plus a fresh session id;
* answers come as ``text/event-stream`` ``message`` events; notifications get 202;
* no standalone GET stream (405), DELETE ends the session; no ``structuredContent``.

``GET /_log`` lists the JSON-RPC methods received, so tests can see the negotiation.
Run: ``python legacy_mcp_server.py --host 127.0.0.1 --port N``.
"""

from __future__ import annotations

import argparse
import json
import uuid
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

SUPPORTED_VERSIONS = ("2024-11-05", "2025-03-26")
LATEST_VERSION = "2025-03-26"
TOOLS = [
    {"name": "echo", "description": "Echo the text back.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"name": "fail", "description": "Always fails.", "inputSchema": {"type": "object", "properties": {}}},
]

sessions: set[str] = set()
received: list[dict[str, Any]] = []


def _error(status: int, message: str, code: int = -32600) -> Response:
    body = {"jsonrpc": "2.0", "id": "server-error", "error": {"code": code, "message": message}}
    return JSONResponse(body, status_code=status)


def _sse(message: dict[str, Any], headers: dict[str, str] | None = None) -> Response:
    event = f"event: message\r\ndata: {json.dumps(message)}\r\n\r\n"
    return Response(event, media_type="text/event-stream", headers=headers)


def _result(request: dict[str, Any]) -> dict[str, Any]:
    method, params = request["method"], request.get("params") or {}
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call" and params.get("name") == "echo":
        return {"content": [{"type": "text", "text": str(params.get("arguments", {}).get("text", ""))}],
                "isError": False}
    if method == "tools/call" and params.get("name") == "fail":
        return {"content": [{"type": "text", "text": "this tool always fails"}], "isError": True}
    raise LookupError(method)


async def mcp(request: Request) -> Response:
    if request.method == "GET":
        return Response(status_code=405)
    session_id = request.headers.get("mcp-session-id")
    if request.method == "DELETE":
        sessions.discard(session_id or "")
        return Response(status_code=200)
    accept = request.headers.get("accept", "")
    if "application/json" not in accept or "text/event-stream" not in accept:
        return _error(406, "Not Acceptable: Client must accept both application/json and text/event-stream")
    message = json.loads(await request.body())
    received.append({"method": message.get("method"), "session": bool(session_id),
                     "version_header": request.headers.get("mcp-protocol-version")})
    if message.get("method") == "initialize":
        requested = (message.get("params") or {}).get("protocolVersion")
        version = requested if requested in SUPPORTED_VERSIONS else LATEST_VERSION
        new_session = uuid.uuid4().hex
        sessions.add(new_session)
        result = {"protocolVersion": version, "capabilities": {"tools": {"listChanged": False}},
                  "serverInfo": {"name": "legacy-1x", "version": "1.9.0"}}
        return _sse({"jsonrpc": "2.0", "id": message["id"], "result": result}, {"mcp-session-id": new_session})
    if not session_id:
        return _error(400, "Bad Request: Missing session ID")
    if session_id not in sessions:
        return _error(404, "Not Found: Invalid or expired session ID")
    version_header = request.headers.get("mcp-protocol-version")
    if version_header and version_header not in SUPPORTED_VERSIONS:
        return _error(400, f"Bad Request: Unsupported protocol version: {version_header}")
    if "id" not in message or "method" not in message:
        return Response(status_code=202)
    try:
        return _sse({"jsonrpc": "2.0", "id": message["id"], "result": _result(message)})
    except LookupError:
        error = {"code": -32601, "message": f"Method not found: {message['method']}"}
        return _sse({"jsonrpc": "2.0", "id": message["id"], "error": error})


async def log(request: Request) -> Response:
    return JSONResponse(received)


app = Starlette(routes=[Route("/mcp", mcp, methods=["GET", "POST", "DELETE"]), Route("/_log", log)])

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
