"""An agent stand-in that probes the network it was started in (standard library only), run confined by the
launcher tests.

It serves an A2A-like card at ``/.well-known/agent-card.json`` (so the launcher sees it ready through the
bridge to its port) and ``POST /probe`` with ``{"method", "url", "body", "headers"}``: it makes that HTTP
request itself, from inside, and answers ``{"status", "body"}`` or ``{"error"}`` (connection refused,
network unreachable, ...). ``POST /connect`` with ``{"host", "port"}`` tries a bare TCP connect.
``POST /relink`` with ``{"path", "target"}`` puts a symbolic link at ``path`` (over what is there).

    python net_probe_server.py --host 127.0.0.1 --port 8123
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

TIMEOUT = 5.0


def request(probe: dict[str, Any]) -> dict[str, Any]:
    """The HTTP request a cheating agent would make, as it went."""
    url = urlsplit(probe["url"])
    target = url.path + (f"?{url.query}" if url.query else "")
    try:
        connection = http.client.HTTPConnection(url.hostname or "", url.port or 80, timeout=TIMEOUT)
        connection.request(probe.get("method", "GET"), probe.get("raw_target") or target,
                           body=probe.get("body"), headers=probe.get("headers", {}))
        answer = connection.getresponse()
        body = answer.read(4096).decode(errors="replace")
        connection.close()
        return {"status": answer.status, "body": body}
    except OSError as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}


def connect(probe: dict[str, Any]) -> dict[str, Any]:
    try:
        with socket.create_connection((probe["host"], int(probe["port"])), timeout=TIMEOUT):
            return {"connected": True}
    except OSError as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.path == "/.well-known/agent-card.json":
            self._send(200, {"name": "net-probe", "version": "1.0.0"})
        else:
            self._send(404, {})

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        probe = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        if self.path == "/probe":
            self._send(200, request(probe))
        elif self.path == "/connect":
            self._send(200, connect(probe))
        elif self.path == "/relink":
            os.symlink(probe["target"], probe["path"] + ".new")
            os.replace(probe["path"] + ".new", probe["path"])
            self._send(200, {"relinked": True})
        else:
            self._send(404, {})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required="PORT" not in os.environ,
                        default=os.environ.get("PORT"), help="or the PORT variable")
    args = parser.parse_args()
    ThreadingHTTPServer((args.host, args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
