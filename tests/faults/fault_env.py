"""A small peer server for the fault suite, run as a script: ``fault_env.py --host H --port P [...]``.

It serves the env card (no tools, no data plane) and, with ``--die-after``, exits with code 7
after that many seconds, as an env that crashes mid-run does; with ``--exit-code N`` it exits at
once with that code, before it listens, as an env that cannot start does. With ``--child`` it also starts a
sleeping helper process of its own (a grandchild of the run), which must die with the run.
``--silent`` answers nothing at all; with ``--silent-posts`` every POST (the env's data plane
and MCP endpoint, an agent's A2A endpoint and extensions) is read and never answered: the
connection stays open and silent. ``--agent`` serves a plain A2A 1.0 agent card (declaring
agent-config) instead of the env card.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CARD: dict[str, object] = {"name": "fault", "protocolVersion": "0.1", "url": "/agentenv",
        "additionalInterfaces": [{"url": "/mcp", "transport": "mcp"}],
        "capabilities": {"tools": [], "operations": [], "extensions": []}}


def _agent_card(host: str, port: int) -> dict[str, object]:
    return {"name": "silent", "description": "Accepts A2A requests and never answers them.", "version": "1.0.0",
            "supportedInterfaces": [{"url": f"http://{host}:{port}/", "protocolBinding": "JSONRPC",
                                     "protocolVersion": "1.0"}],
            "capabilities": {"streaming": False, "extensions": [
                {"uri": "urn:agentenv:agent-config/v1", "description": "Takes a system prompt (never answers).",
                 "params": {"endpoint": "/ext/agent-config",
                            "methods": {"set": {"method": "POST", "request": {"supported": ["system_prompt"]}},
                                        "get": {"method": "GET", "response": {"required": ["config"]}}}}}]},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"], "skills": []}


class _Handler(BaseHTTPRequestHandler):
    card_path = "/.well-known/agent-env.json"
    card: dict[str, object] = CARD
    silent_posts = False
    silent_gets = False

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.silent_posts:
            threading.Event().wait()  # hold the connection open, never answer
        self.send_response(501)
        self.end_headers()

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        if self.silent_gets:
            threading.Event().wait()
        body = json.dumps(self.card).encode() if self.path == self.card_path else b"{}"
        self.send_response(200 if self.path == self.card_path else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--die-after", type=float)
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--silent-posts", action="store_true")
    parser.add_argument("--agent", action="store_true")
    parser.add_argument("--silent", action="store_true", help="answer nothing at all")
    parser.add_argument("--exit-code", type=int, help="exit at once with this code, before listening")
    args = parser.parse_args()
    if args.exit_code is not None:
        print(f"fault env: cannot start (exit code {args.exit_code})", file=sys.stderr, flush=True)
        sys.exit(args.exit_code)
    _Handler.silent_posts = args.silent_posts or args.silent
    if args.silent_posts:  # a data plane that would answer, if it answered
        capabilities: dict[str, object] = {"tools": [], "extensions": [],
                                           "operations": ["data/reset", "data/add", "data/get"]}
        _Handler.card = {**CARD, "capabilities": capabilities}
    _Handler.silent_gets = args.silent
    if args.agent:
        _Handler.card_path, _Handler.card = "/.well-known/agent-card.json", _agent_card(args.host, args.port)
    if args.child:
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    if args.die_after is not None:
        def die() -> None:
            print("fault env: dying on purpose", file=sys.stderr, flush=True)
            os._exit(7)
        threading.Timer(args.die_after, die).start()
    server = ThreadingHTTPServer((args.host, args.port), _Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
