"""One start that everyone who needs it shares: the run's mock model, its gateway, a block lookup.

The first caller begins the start; the others, while it is in flight or after it succeeded, await
the same one. A start that fails or is cancelled is forgotten, so the next caller begins it again,
whether it failed while running (forgotten before its waiters hear of it) or was cancelled before
it first ran (a stop landing on a busy loop: forgotten when it is done). A waiter that is cancelled
leaves the start going, for the others (``asyncio.shield``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

_T = TypeVar("_T")

__all__ = ["StartOnce"]


class StartOnce(Generic[_T]):
    """A start shared by every caller of :meth:`get`, begun by the first."""

    def __init__(self) -> None:
        self._task: asyncio.Future[_T] | None = None

    @property
    def task(self) -> asyncio.Future[_T] | None:
        """The start in flight or done (None before the first caller, and after one that failed)."""
        return self._task

    async def get(self, start: Callable[[], Awaitable[_T]]) -> _T:
        """What the shared start gives, begun with ``start()`` when there is none."""
        task = self._task
        if task is None:
            task = self._task = asyncio.ensure_future(self._run(start))
            task.add_done_callback(self._forget_cancelled)
        return await asyncio.shield(task)

    async def _run(self, start: Callable[[], Awaitable[_T]]) -> _T:
        mine = self._task
        try:
            return await start()
        except BaseException:
            if self._task is mine:
                self._task = None  # the next caller begins it again
            raise

    def _forget_cancelled(self, task: asyncio.Future[_T]) -> None:
        """A start cancelled before it first ran never reaches its own ``except``: forget it here."""
        if task.cancelled() and self._task is task:
            self._task = None
