"""The gate that decides when a benchmark's next task run starts: this project's own.

A semaphore whose size and pause can change while task runs wait on it, which neither an asyncio
semaphore nor Prefect's machinery gives (docs/controlling-a-run.md: a paused parent flow run keeps
starting children; a raised global concurrency limit reaches waiters only at their next retry).

* Task runs wait in the order they asked (the run's order), and a freed slot goes straight to the
  first waiter, so nothing overtakes and no slot is lost between a release and the next start.
* Raised, the waiters that now fit start at once; lowered, the task runs in flight finish and no
  new one starts until fewer than the new concurrency are running.
* Paused, none starts; the ones in flight run on. Resumed, as many start as the concurrency allows.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator


class LiveGate:
    """Slots for task runs, ``concurrency`` at once, none while ``paused``."""

    def __init__(self, concurrency: int, *, paused: bool = False) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.concurrency, self.paused = concurrency, paused
        self.running = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    def __repr__(self) -> str:
        return f"LiveGate(concurrency={self.concurrency}, paused={self.paused}, running={self.running})"

    @property
    def waiting(self) -> int:
        """Task runs waiting for a slot."""
        return sum(1 for f in self._waiters if not f.done())

    def set(self, *, concurrency: int | None = None, paused: bool | None = None) -> None:
        """Change the concurrency or the pause; waiters that now fit start."""
        if concurrency is not None:
            if concurrency < 1:
                raise ValueError("concurrency must be at least 1")
            self.concurrency = concurrency
        if paused is not None:
            self.paused = paused
        self._wake()

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold a slot for the block's length (waiting while paused or full)."""
        await self._acquire()
        try:
            yield
        finally:
            self._release()

    def _open(self) -> bool:
        return not self.paused and self.running < self.concurrency

    async def _acquire(self) -> None:
        if not self._waiters and self._open():
            self.running += 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._release()  # handed a slot as it was cancelled: hand it on
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
            raise

    def _release(self) -> None:
        self.running -= 1
        self._wake()

    def _wake(self) -> None:
        """Hand free slots to the first waiters (the slot is counted as it is handed)."""
        while self._waiters and self._open():
            waiter = self._waiters.popleft()
            if not waiter.done():
                self.running += 1
                waiter.set_result(None)
