#!/usr/bin/env python
"""Which Prefect API round trips one CLI command makes: every HTTP request and every event, counted.

Started instead of the console script, with the same arguments::

    BENCH_API_CALLS=out.json python benchmarks/_api_calls.py bench B --epochs 3 --concurrency 1

Before handing over to the CLI it wraps ``httpx``'s ``send`` (sync and async) and Prefect's events
worker from outside, so the code under test is unchanged. Request paths have their ids replaced by
``{id}``, so the counts group by endpoint. Events are counted by name (task-run state changes are
events, not HTTP requests, in Prefect 3). Log batches are ``POST /logs/`` requests. The counts and
each request's duration are written at exit.
"""

from __future__ import annotations

import atexit
import collections
import json
import os
import re
import sys
import threading
import time
from typing import Any

import httpx

_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_LOCK = threading.Lock()
CALLS: list[dict[str, Any]] = []
EVENTS: collections.Counter[str] = collections.Counter()
T0 = time.monotonic()


def _record(request: httpx.Request, start: float, status: int | None) -> None:
    path = _ID.sub("{id}", request.url.path)
    with _LOCK:
        CALLS.append({"call": f"{request.method} {path}", "at": round(start - T0, 4),
                      "took": round(time.monotonic() - start, 4), "status": status,
                      "thread": threading.current_thread().name})


def _wrap_async(original: Any) -> Any:
    async def send(self: httpx.AsyncClient, request: httpx.Request, *args: Any, **kwargs: Any) -> httpx.Response:
        start, status = time.monotonic(), None
        try:
            response = await original(self, request, *args, **kwargs)
            status = response.status_code
            return response
        finally:
            _record(request, start, status)
    return send


def _wrap_sync(original: Any) -> Any:
    def send(self: httpx.Client, request: httpx.Request, *args: Any, **kwargs: Any) -> httpx.Response:
        start, status = time.monotonic(), None
        try:
            response = original(self, request, *args, **kwargs)
            status = response.status_code
            return response
        finally:
            _record(request, start, status)
    return send


def instrument() -> None:
    httpx.AsyncClient.send = _wrap_async(httpx.AsyncClient.send)  # type: ignore[method-assign]
    httpx.Client.send = _wrap_sync(httpx.Client.send)  # type: ignore[method-assign]
    from prefect.events.worker import EventsWorker

    original = EventsWorker.send

    def send(self: Any, event: Any) -> None:
        with _LOCK:
            EVENTS[str(event.event)] += 1
        return original(self, event)

    EventsWorker.send = send  # type: ignore[method-assign]


def _dump() -> None:
    out = os.environ.get("BENCH_API_CALLS")
    if not out:
        return
    counts = collections.Counter(c["call"] for c in CALLS)
    with open(out, "w", encoding="utf-8") as fh:
        json.dump({"counts": dict(counts.most_common()), "events": dict(EVENTS.most_common()), "calls": CALLS}, fh,
                  indent=1)


def main() -> None:
    instrument()
    atexit.register(_dump)
    import prefect_agentenv.cli as cli

    sys.argv = ["prefect-agentenv", *sys.argv[1:]]
    cli.main()


if __name__ == "__main__":
    main()
