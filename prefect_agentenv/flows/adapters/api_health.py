"""Whether the Prefect API is still there, for a run that must finish without it.

A run records itself in Prefect (task runs as events, logs in batches, artifacts, its final
state), but its steps and its report do not need Prefect. When the API goes away mid-run, every
one of those calls would retry with backoff for many seconds, one after the other, and
Prefect's workers print each failure. So:

* after its steps (and teardown), a process's own run asks the API once, with a short timeout
  and no retries (:func:`probe`); when it does not answer, the report says so and the run is
  marked **lost** (:func:`mark_lost`) once the report is on disk, which the CLI waits for to
  leave at once with one line;
* Prefect's own log records about failing to reach the API are dropped from the console
  (:class:`QuietApiFailures`), counted instead: the CLI says it in one line at the end.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading

import httpx

from prefect_agentenv.protocols.tls import ssl_context

PROBE_TIMEOUT_SECONDS = 3.0
"""Connect and read timeout of the one health request (no retries)."""

_lost = threading.Event()
_lost_reason: list[str] = []
_troubles: list[str] = []


async def probe(timeout: float = PROBE_TIMEOUT_SECONDS) -> str | None:
    """``None`` when the configured Prefect API answers its health check at all, else why not (one line).

    Also ``None`` without a configured API (a temporary in-process server cannot go away alone).
    """
    from prefect.settings import get_current_settings

    url = get_current_settings().api.url
    if not url:
        return None
    try:
        async with httpx.AsyncClient(timeout=httpx.Timeout(timeout), trust_env=False,
                                     verify=ssl_context(trust_env=False)) as client:
            await client.get(f"{url.rstrip('/')}/health")
    except httpx.TransportError as exc:
        return f"the Prefect API at {url} is unreachable ({type(exc).__name__}: {str(exc) or 'no answer'})"
    return None  # any answer, even a busy server's 503, is an API that is still there


def mark_lost(reason: str) -> None:
    """Say that the run's report is on disk and the Prefect API is gone (the CLI leaves at once)."""
    if not _lost.is_set():
        _lost_reason.append(reason)
        _lost.set()


def lost() -> str | None:
    """Why the API was found gone after this process's run, if it was."""
    return _lost_reason[0] if _lost.is_set() else None


async def wait_lost(poll: float = 0.25) -> str:
    """Return once :func:`mark_lost` was called (from any thread)."""
    while not _lost.is_set():
        await asyncio.sleep(poll)
    return _lost_reason[0]


def troubles() -> list[str]:
    """The distinct API failures Prefect's own loggers reported (and that were kept off the console)."""
    return list(_troubles)


_STUCK = re.compile(r"^Finished in state (Pending|Running)\(")
"""A run the engine left before it was even Running, or still Running: only when its API failed."""


def _is_api_failure(record: logging.LogRecord) -> bool:
    """A record of Prefect's own machinery about not reaching its API (never about a user's code).

    Prefect's background services (events, logs, concurrency slots) talk only to the API, so each
    of their failures is one; the engine's "Finished in state Pending()" means a task run never
    got its state from the API; anything else must carry a connection error.
    """
    if record.name.startswith("prefect._internal.concurrency") and record.levelno >= logging.WARNING:
        return True
    error = record.exc_info[1] if record.exc_info else None
    if record.name.startswith("prefect.flow_runs") and isinstance(error, httpx.TransportError):
        return True  # the flow's steps wrap their peers' errors: a bare one is the engine's own call
    if record.name.startswith(("prefect.flow_runs", "prefect.task_runs")):
        return bool(_STUCK.match(record.getMessage()))
    if not record.name.startswith("prefect."):
        return False
    if isinstance(error, OSError | httpx.TransportError | TimeoutError):
        return True
    if error is not None and type(error).__module__.startswith("websockets"):
        return True
    return record.name == "prefect.events.clients" and record.getMessage().startswith("Unable to connect")


class QuietApiFailures(logging.Filter):
    """Keeps Prefect's records about an unreachable API off the console: the CLI says it once.

    ``PREFECT_LOGGING_LEVEL=DEBUG`` shows them all.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if not _is_api_failure(record) or logging.getLogger(record.name).isEnabledFor(logging.DEBUG):
            return True
        error = record.exc_info[1] if record.exc_info else None
        what = f"{type(error).__name__}: {error}" if error is not None else record.getMessage()
        what = what.splitlines()[0][:200] if what else "unreachable"
        if what not in _troubles and len(_troubles) < 20:
            _troubles.append(what)
        return False


__all__ = ["PROBE_TIMEOUT_SECONDS", "QuietApiFailures", "lost", "mark_lost", "probe", "troubles", "wait_lost"]
