"""Stopping a run from outside, in order: SIGINT, SIGTERM and Prefect cancellation become one
request that stops the steps in flight, after which teardown and the report run as usual.

A run owns a :class:`StopRequest`; the scheduler registers how to stop its steps on it. Signal
handlers call every active request, so one Ctrl-C stops every run of the process. The exit
code and the one line the CLI prints for each reason are here too (documented in docs/reliability.md, "Exit codes").
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal

from prefect_agentenv.exit_codes import ExitCode

logger = logging.getLogger("prefect_agentenv.stop")

StopReason = Literal["SIGINT", "SIGTERM", "cancelled"]

EXIT_CODES: dict[str, ExitCode] = {"cancelled": ExitCode.CANCELLED, "SIGINT": ExitCode.SIGINT, "SIGTERM": ExitCode.SIGTERM}
"""The CLI's exit code for a run stopped for each reason (128 + signal number for signals)."""

DESCRIPTIONS: dict[str, str] = {
    "SIGINT": "interrupted (Ctrl-C)",
    "SIGTERM": "terminated (SIGTERM)",
    "cancelled": "cancelled from Prefect",
}


class StopRequest:
    """Asks one run to stop; the first reason wins, later requests are ignored."""

    def __init__(self) -> None:
        self.reason: StopReason | None = None
        self._callbacks: list[Callable[[StopReason], Any]] = []

    def on_stop(self, callback: Callable[[StopReason], Any]) -> None:
        """Call ``callback(reason)`` when a stop is requested (at once when it already was)."""
        self._callbacks.append(callback)
        if self.reason is not None:
            callback(self.reason)

    def request(self, reason: StopReason) -> None:
        if self.reason is not None:
            logger.warning("already stopping (%s); teardown is running", DESCRIPTIONS[self.reason])
            return
        self.reason = reason
        logger.warning("%s: stopping the steps in flight, then tearing down", DESCRIPTIONS[reason])
        for callback in self._callbacks:
            callback(reason)


_active: list[StopRequest] = []
_installed: dict[signal.Signals, Any] = {}


@contextmanager
def stop_on_signals(request: StopRequest) -> Iterator[None]:
    """While the block runs, SIGINT and SIGTERM ask ``request`` (and other active runs) to stop.

    Only in the main thread of a process whose loop supports signal handlers; elsewhere (a
    worker thread, Windows) the block runs unchanged. The handlers that were there before
    (Prefect's SIGTERM bridge, asyncio's Ctrl-C) are put back when the last run ends.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    loop = asyncio.get_running_loop()
    if not _active:
        handled: tuple[tuple[signal.Signals, StopReason], ...] = ((signal.SIGINT, "SIGINT"), (signal.SIGTERM, "SIGTERM"))
        for sig, reason in handled:
            previous = signal.getsignal(sig)
            try:
                loop.add_signal_handler(sig, _stop_all, reason)
            except (NotImplementedError, RuntimeError, ValueError):
                continue
            _installed[sig] = previous
    _active.append(request)
    try:
        yield
    finally:
        _active.remove(request)
        if not _active:
            for sig, previous in list(_installed.items()):
                loop.remove_signal_handler(sig)
                if previous is not None:
                    signal.signal(sig, previous)
                del _installed[sig]


def _stop_all(reason: StopReason) -> None:
    for request in list(_active):
        request.request(reason)
