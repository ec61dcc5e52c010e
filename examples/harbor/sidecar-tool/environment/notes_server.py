"""The task's sidecar: an MCP server with one tool, ``take_note``, and ``GET /notes`` for the tests. Standard
library only (the image has no MCP package). Over streamable HTTP each ``POST /mcp`` is one JSON-RPC message,
answered with JSON; a notification gets 202; there is no server-to-client stream (``GET /mcp`` is 405, as the
transport allows). Over the older SSE transport ``GET /sse`` is the stream, whose first event names the
endpoint the client posts its messages to (``/messages?session=N``), each answered on that stream."""

import json
import os
import queue
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

NOTES: list[str] = []
STREAMS: dict[str, "queue.Queue[dict]"] = {}
LOCK = threading.Lock()
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
        request = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        if self.path.startswith("/messages?session="):
            stream = STREAMS.get(self.path.split("=", 1)[1])
            if stream is None:
                return self._send(404)
            reply = answer(request)
            if reply is not None:
                stream.put(reply)
            return self._send(202)
        if self.path != "/mcp":
            return self._send(404)
        reply = answer(request)
        if reply is None:
            return self._send(202)
        return self._send(200, json.dumps(reply).encode())

    def do_GET(self) -> None:
        if self.path == "/notes":
            return self._send(200, json.dumps(NOTES).encode())
        if self.path == "/sse":
            return self._stream()
        return self._send(405)

    def _stream(self) -> None:
        with LOCK:
            session = str(len(STREAMS) + 1)
            STREAMS[session] = outbox = queue.Queue()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.end_headers()
        self.close_connection = True
        try:
            self.wfile.write(f"event: endpoint\ndata: /messages?session={session}\n\n".encode())
            self.wfile.flush()
            while True:
                try:
                    message = outbox.get(timeout=15)
                except queue.Empty:
                    self.wfile.write(b": keep-alive\n\n")
                else:
                    self.wfile.write(f"event: message\ndata: {json.dumps(message)}\n\n".encode())
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            STREAMS.pop(session, None)

    def do_DELETE(self) -> None:
        self._send(405)

    def log_message(self, *args: object) -> None:
        pass


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
