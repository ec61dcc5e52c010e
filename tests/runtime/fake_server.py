"""A tiny stand-in for an env server, run as a script by the launcher tests.

Modes:
  ok           serves the card, an MCP-ish endpoint (400 to a bare GET) and /env, /cwd.
  mcp-only     404 on the card, MCP endpoint answers.
  crash        writes to stderr and exits 3 before listening.
  never-ready  never listens.
  ignore-term  like ok, but ignores SIGTERM.
  with-helper  like ok, plus a helper process in the same process group (pid at /helper-pid).
  port-taken   like ok but, on the first try only, fails with "Address already in use".
  escaping-helper  like ok, plus a helper in a session of its own (as a coding agent starts its CLI),
               which starts one more process with an empty environment; /helper-pid gives both pids.

Every mode writes its pid to --pid-file first, so a test can check by pid that it is gone.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

CARD = {
    "name": "fake",
    "protocolVersion": "0.1",
    "url": "/agentenv",
    "additionalInterfaces": [{"url": "/mcp", "transport": "mcp"}],
    "capabilities": {"tools": [], "operations": [], "extensions": []},
}

HELPER = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
ESCAPING = ("import subprocess, sys, time; "
            "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'], env={}); "
            "print(child.pid, flush=True); time.sleep(600)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required="PORT" not in os.environ,
                        default=os.environ.get("PORT"), help="or the PORT variable")
    parser.add_argument("--mode", default="ok")
    parser.add_argument("--pid-file")
    parser.add_argument("--marker", help="file that exists after the first start (port-taken mode)")
    args = parser.parse_args()
    if args.pid_file:
        Path(args.pid_file).write_text(str(os.getpid()))

    if args.mode == "crash":
        print("starting fake env", flush=True)
        print("fatal: cannot open the mailbox database", file=sys.stderr, flush=True)
        sys.exit(3)
    if args.mode == "never-ready":
        while True:
            time.sleep(60)
    if args.mode == "port-taken" and args.marker and not Path(args.marker).exists():
        Path(args.marker).write_text("tried")
        print("OSError: [Errno 98] Address already in use", file=sys.stderr, flush=True)
        sys.exit(1)
    if args.mode == "ignore-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)

    helper_pid: object = None
    if args.mode == "with-helper":
        # The helper ignores SIGTERM, so only the launcher's SIGKILL sweep of the group ends it.
        helper = subprocess.Popen([sys.executable, "-c", HELPER])
        helper_pid = helper.pid
    if args.mode == "escaping-helper":
        escaping = subprocess.Popen([sys.executable, "-c", ESCAPING], start_new_session=True, stdout=subprocess.PIPE,
                                    text=True)
        assert escaping.stdout is not None
        helper_pid = [escaping.pid, int(escaping.stdout.readline())]
    if args.mode != "ignore-term":
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))

    mode = args.mode

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server naming)
            if self.path == "/.well-known/agent-env.json" and mode != "mcp-only":
                self._json(200, CARD)
            elif self.path == "/mcp":
                self._json(400, {"error": "missing session id"})
            elif self.path == "/env":
                self._json(200, dict(os.environ))
            elif self.path == "/cwd":
                self._json(200, {"cwd": os.getcwd()})
            elif self.path == "/helper-pid":
                self._json(200, {"pid": helper_pid})
            else:
                self._json(404, {"error": "not found"})

        def _json(self, status: int, body: object) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer((args.host, args.port), Handler)
    print(f"listening on {args.host}:{args.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
