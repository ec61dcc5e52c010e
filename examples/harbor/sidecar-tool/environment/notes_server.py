"""The task's sidecar: an MCP server over streamable HTTP with one tool, ``take_note``, and ``GET /notes`` for the
tests. Standard library only (the image has no MCP package): each ``POST /mcp`` is one JSON-RPC message, answered
with JSON; a notification gets 202; there is no server-to-client stream (``GET /mcp`` is 405, as the
transport allows)."""

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

NOTES: list[str] = []
TOOL = {"name": "take_note", "description": "Keep a note for the team.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}


def answer(request: dict) -> dict | None:
    method, params = request.get("method"), request.get("params") or {}
    if "id" not in request:
        return None
    if method == "initialize":
        result = {"protocolVersion": params.get("protocolVersion", "2025-06-18"), "capabilities": {"tools": {}},
                  "serverInfo": {"name": "notes", "version": "1"}}
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "tools/call" and params.get("name") == "take_note":
        NOTES.append(str((params.get("arguments") or {}).get("text", "")))
        text = f"{os.environ.get('NOTES_GREETING', 'ok')}: {NOTES[-1]}"
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    else:
        return {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": f"no method {method}"}}
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _send(self, status: int, body: bytes = b"", kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        if self.path != "/mcp":
            return self._send(404)
        request = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        reply = answer(request)
        if reply is None:
            return self._send(202)
        return self._send(200, json.dumps(reply).encode())

    def do_GET(self) -> None:
        if self.path == "/notes":
            return self._send(200, json.dumps(NOTES).encode())
        return self._send(405)

    def do_DELETE(self) -> None:
        self._send(405)

    def log_message(self, *args: object) -> None:
        pass


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
