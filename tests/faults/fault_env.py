"""A small env server for the fault suite, run as a script: ``fault_env.py --host H --port P [--die-after S]``.

It serves the env card (no tools, no data plane) and, with ``--die-after``, exits with code 7
after that many seconds, as an env that crashes mid-run does. With ``--child`` it also starts a
sleeping helper process of its own (a grandchild of the run), which must die with the run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CARD = {"name": "fault", "protocolVersion": "0.1", "url": "/agentenv",
        "additionalInterfaces": [{"url": "/mcp", "transport": "mcp"}],
        "capabilities": {"tools": [], "operations": [], "extensions": []}}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        body = json.dumps(CARD).encode() if self.path == "/.well-known/agent-env.json" else b"{}"
        self.send_response(200 if self.path == "/.well-known/agent-env.json" else 404)
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
    args = parser.parse_args()
    if args.child:
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    if args.die_after is not None:
        def die() -> None:
            print("fault env: dying on purpose", file=sys.stderr, flush=True)
            os._exit(7)
        threading.Timer(args.die_after, die).start()
    ThreadingHTTPServer((args.host, args.port), _Handler).serve_forever()


if __name__ == "__main__":
    main()
