"""A plain A2A agent in one file, on the standard library alone: the agent of docs/bring-your-own.md.

Any Python 3.10+ runs it, so ``--command "python plain_agent.py --host {host} --port {port}"`` works with
whatever ``python`` the PATH holds (registration resolves it, and the script, to absolute paths). It serves an
A2A 0.3 card at ``/.well-known/agent-card.json`` and JSON-RPC at ``/``: ``message/send`` completes a task with
the reply ``plain agent heard: <prompt>``, ``tasks/get`` returns it, ``tasks/cancel`` cancels it. It declares no
extension, so a task can prompt it and grade its replies, and nothing more.

    python plain_agent.py --host 127.0.0.1 --port 9100
"""

from __future__ import annotations

import argparse
import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CARD_PATH = "/.well-known/agent-card.json"
TASKS: dict[str, dict[str, Any]] = {}
LOCK = threading.Lock()


def card(url: str) -> dict[str, Any]:
    return {"name": "plain", "description": "A plain A2A agent with no extensions.", "version": "1.0.0",
            "url": url + "/", "preferredTransport": "JSONRPC", "protocolVersion": "0.3.0",
            "capabilities": {"streaming": False}, "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "echo", "name": "echo", "description": "Repeats what it heard.", "tags": ["echo"]}]}


def heard(message: dict[str, Any]) -> str:
    return " ".join(part.get("text", "") for part in message.get("parts", []) if isinstance(part, dict)).strip()


def send(params: dict[str, Any]) -> dict[str, Any]:
    """A task, completed at once with the reply."""
    message = params.get("message") or {}
    context_id = message.get("contextId") or uuid.uuid4().hex
    reply = {"kind": "message", "role": "agent", "messageId": uuid.uuid4().hex, "contextId": context_id,
             "parts": [{"kind": "text", "text": f"plain agent heard: {heard(message)}"}]}
    task = {"kind": "task", "id": uuid.uuid4().hex, "contextId": context_id,
            "status": {"state": "completed", "message": reply}, "history": [message, reply]}
    reply["taskId"] = task["id"]
    with LOCK:
        TASKS[task["id"]] = task
    return task


def task_named(params: dict[str, Any], *, cancel: bool = False) -> dict[str, Any] | None:
    with LOCK:
        task = TASKS.get(str(params.get("id")))
        if task is not None and cancel and task["status"]["state"] not in ("completed", "failed"):
            task["status"] = {"state": "canceled"}
        return task


class Handler(BaseHTTPRequestHandler):
    server_version = "plain-agent/1.0"

    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        if self.path.split("?")[0] in (CARD_PATH, "/.well-known/agent.json"):
            host, port = self.server.server_address[:2]
            self._json(200, card(f"http://{host}:{port}"))
        else:
            self._json(404, {"error": "not found"})

    def do_POST(self) -> None:  # noqa: N802
        try:
            request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        except ValueError:
            self._json(200, {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}})
            return
        method, params = request.get("method"), request.get("params") or {}
        if method == "message/send":
            result: dict[str, Any] | None = send(params)
        elif method in ("tasks/get", "tasks/cancel"):
            result = task_named(params, cancel=method == "tasks/cancel")
        else:
            self._json(200, {"jsonrpc": "2.0", "id": request.get("id"),
                             "error": {"code": -32601, "message": f"method not found: {method}"}})
            return
        if result is None:
            self._json(200, {"jsonrpc": "2.0", "id": request.get("id"),
                             "error": {"code": -32001, "message": "task not found"}})
        else:
            self._json(200, {"jsonrpc": "2.0", "id": request.get("id"), "result": result})

    def _json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the standard library's name)
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    ThreadingHTTPServer((args.host, args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
