"""Serve a report folder on 127.0.0.1 (``prefect-agentenv view --serve``)."""

from __future__ import annotations

import functools
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class names it so
        """Requests are not worth a line each on the terminal."""


def report_server(folder: Path, port: int = 0) -> ThreadingHTTPServer:
    """A server for ``folder`` bound to loopback only (``port`` 0: a free one); the caller runs and closes it."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    return ThreadingHTTPServer(("127.0.0.1", port), handler)
