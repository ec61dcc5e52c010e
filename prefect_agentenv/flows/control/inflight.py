"""The task runs a benchmark has queued or in flight, as ``control`` names, cancels and times them.

A task run is named ``TASK/SEED/EPOCH`` (and `` @CELL`` in a sweep); ``control cancel`` and
``requeue`` also take the task id alone (when it names one task run), ``TASK/EPOCH``, or the
name the task run has in Prefect (``TASK · epoch N``).

Each attempt runs as a task of its own, so cancelling one stops that attempt only: its subflow,
task run or fleet flow run is cancelled as a timeout cancels it (its envs and agents are torn
down), and it is recorded as cancelled. Its time limit is a deadline that a hold of the agents'
model calls (``pause --now``) moves on by as long as it held, and that ``control set
timeout_seconds=…`` moves for the attempts already running.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from prefect_agentenv.grading.outcome import Outcome
from prefect_agentenv.results import RunKey, TaskResult

T = TypeVar("T")


def key_name(key: RunKey) -> str:
    """``TASK/SEED/EPOCH`` (`` @CELL`` in a sweep): how ``control`` names a task run."""
    return f"{key.task_id}/{key.seed_index}/{key.epoch}" + (f" @{key.cell}" if key.cell else "")


def matches(query: str, key: RunKey) -> bool:
    """Whether ``query`` names ``key`` (see the module's docstring for the forms taken)."""
    q = query.strip()
    forms = {key.task_id, key_name(key), f"{key.task_id}/{key.epoch}", key.label(),
             f"{key.task_id} · epoch {key.epoch}", f"{key.task_id}/{key.seed_index}/{key.epoch}"}
    return q in forms or (key.cell is not None and q.startswith(f"{key.task_id} · epoch {key.epoch} · "))


def select(query: str, keys: Iterable[RunKey]) -> list[RunKey]:
    return [k for k in keys if matches(query, k)]


def cancelled_result(key: RunKey, by: str, reason: str | None, started_at: str | None = None,
                     duration_s: float = 0.0) -> TaskResult:
    """A task run an operator cancelled: UNSCORED (in no mean), run again by a resume."""
    why = f"cancelled by {by}" + (f": {reason}" if reason else "")
    return TaskResult(task_id=key.task_id, seed_index=key.seed_index, epoch=key.epoch, cell=key.cell,
                      status="cancelled", outcome=Outcome.UNSCORED, score=None, error=why, started_at=started_at,
                      duration_s=round(duration_s, 3))


@dataclass
class _Deadline:
    timeout: asyncio.Timeout
    started: float
    seconds: float | None


@dataclass
class _Cancel:
    by: str
    reason: str | None


class InFlight:
    """The attempts in flight, their deadlines, and the task runs an operator cancelled."""

    def __init__(self) -> None:
        self.attempts: dict[RunKey, asyncio.Future[Any]] = {}
        self.deadlines: dict[RunKey, _Deadline] = {}
        self.cancels: dict[RunKey, _Cancel] = {}
        self.timeout_seconds: float | None = None
        """The operator's time limit for every task run (``None``: each task's own)."""

    def names(self) -> list[str]:
        return [key_name(k) for k in self.attempts]

    async def attempt(self, key: RunKey, run: Callable[[], Awaitable[T]], cancelled: Callable[[_Cancel, float], T]) -> T:
        """``run()`` as its own task; when an operator cancels it, ``cancelled(cancel, seconds)`` instead."""
        cancel = self.cancels.pop(key, None)
        if cancel is not None:  # cancelled while it waited for a slot
            return cancelled(cancel, 0.0)
        t0 = time.monotonic()
        task: asyncio.Task[T] = asyncio.ensure_future(run())
        self.attempts[key] = task
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            cancel = self.cancels.pop(key, None)
            if cancel is None or not task.cancelled() or (current is not None and current.cancelling()):
                raise
            return cancelled(cancel, time.monotonic() - t0)
        finally:
            self.attempts.pop(key, None)

    def cancel(self, key: RunKey, by: str, reason: str | None) -> bool:
        """Cancel ``key``'s attempt now, or before it starts; False when it is neither running nor queued."""
        self.cancels[key] = _Cancel(by, reason)
        task = self.attempts.get(key)
        if task is not None:
            task.cancel()
            return True
        return False

    @contextlib.asynccontextmanager
    async def deadline(self, key: RunKey, seconds: float | None) -> AsyncIterator[None]:
        """``asyncio.timeout`` for an attempt, registered so the operator's changes can move it."""
        own = seconds if self.timeout_seconds is None else self.timeout_seconds
        started = time.monotonic()
        async with asyncio.timeout(own) as timeout:
            self.deadlines[key] = _Deadline(timeout, started, own)
            try:
                yield
            finally:
                self.deadlines.pop(key, None)

    def limit_of(self, task_seconds: float) -> float:
        """The time limit an attempt of a task with ``task_seconds`` has now (the operator's, if set)."""
        return task_seconds if self.timeout_seconds is None else self.timeout_seconds

    def set_timeout(self, seconds: float | None, task_seconds: Callable[[RunKey], float | None]) -> None:
        """A new time limit for every attempt, those running included (``None``: each task's own)."""
        self.timeout_seconds = seconds
        loop = asyncio.get_running_loop()
        for key, d in self.deadlines.items():
            own = seconds if seconds is not None else task_seconds(key)
            d.seconds = own
            d.timeout.reschedule(None if own is None else max(loop.time(), loop.time() - (time.monotonic() - d.started)
                                                              + own))

    def extend(self, seconds: float) -> None:
        """Move every running attempt's deadline on by ``seconds`` (how long the agents were held)."""
        for d in self.deadlines.values():
            when = d.timeout.when()
            if when is not None:
                d.timeout.reschedule(when + seconds)
            d.started += seconds
