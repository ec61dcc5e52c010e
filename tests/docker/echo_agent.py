"""An A2A 0.3 agent on the standard library alone, for the image-mode tests: it runs in the local test
image (Debian's Python, nothing installed), given as ``python -c <this file> HOST PORT``.

* ``GET /.well-known/agent.json``: its card (``protocolVersion: 0.3.0``, JSON-RPC at ``/a2a``).
* ``POST /a2a``: ``message/send`` answers a completed task at once whose reply echoes the prompt and
  says where it ran: ``echo: <prompt> (cgroup: <the first line of /proc/1/cgroup>)``, which names
  docker's scope in a container; ``tasks/get`` answers a task it made.
"""

from __future__ import annotations

import http.server
import json
import sys
import uuid
from typing import Any

CARD = {
    "name": "image-echo", "description": "Echoes, from a container", "protocolVersion": "0.3.0", "url": "/a2a",
    "preferredTransport": "JSONRPC", "version": "1.0.0", "capabilities": {"streaming": False},
    "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
    "skills": [{"id": "echo", "name": "echo", "description": "Echoes", "tags": []}],
}
tasks: dict[str, dict[str, Any]] = {}


def _pid1_cgroup() -> str:
    try:
        with open("/proc/1/cgroup") as cgroup:
            return cgroup.readline().strip()
    except OSError:
        return ""


def _send(params: dict[str, Any]) -> dict[str, Any]:
    message = params["message"]
    prompt = " ".join(p.get("text", "") for p in message.get("parts", []) if p.get("kind") == "text")
    task_id, context_id = uuid.uuid4().hex, message.get("contextId") or uuid.uuid4().hex
    reply = {"kind": "message", "messageId": uuid.uuid4().hex, "role": "agent", "taskId": task_id,
             "contextId": context_id, "parts": [{"kind": "text", "text": f"echo: {prompt} (cgroup: {_pid1_cgroup()})"}]}
    task = {"kind": "task", "id": task_id, "contextId": context_id, "history": [message],
            "status": {"state": "completed", "message": reply}}
    tasks[task_id] = task
    return task


class Handler(http.server.BaseHTTPRequestHandler):
    def _answer(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - the standard library's name
        if self.path == "/.well-known/agent.json":
            self._answer(200, CARD)
        else:
            self._answer(404, {"detail": "not found"})

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        method, params, rid = body.get("method"), body.get("params") or {}, body.get("id")
        if method == "message/send":
            result = _send(params)
        elif method == "tasks/get" and params.get("id") in tasks:
            result = tasks[params["id"]]
        else:
            self._answer(200, {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no {method}"}})
            return
        self._answer(200, {"jsonrpc": "2.0", "id": rid, "result": result})

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        sys.stderr.write(format % args + "\n")


if __name__ == "__main__":
    http.server.ThreadingHTTPServer((sys.argv[1], int(sys.argv[2])), Handler).serve_forever()
