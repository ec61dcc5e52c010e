"""Holding agents at their next model call: ``control pause --now`` of a running benchmark.

While a :class:`ModelHold` is held, the gateway keeps every agent's new completion call waiting
before it is relayed (judges and user simulators are not held: they grade or play work already
done); a call already streaming runs on. Released, the held calls go on in the order they came.
Nothing reaches the agent: a held call is a slow answer, not an error.

The hold is polled rather than awaited as an event, so one hold serves gateways in any event
loop or thread of the process (a benchmark's task runs, a warm pool's gateways).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

POLL_SECONDS = 0.2
"""How often a held call looks whether it was released."""


class ModelHold:
    """A switch the benchmark's dispatcher flips; the gateways of its task runs wait on it."""

    def __init__(self) -> None:
        self.held = False
        self.waiting = 0
        """Calls waiting now (the board and ``control status`` show it)."""
        self.held_since: float | None = None

    def __repr__(self) -> str:
        return f"ModelHold(held={self.held}, waiting={self.waiting})"

    def hold(self) -> None:
        if not self.held:
            self.held, self.held_since = True, time.monotonic()

    def release(self) -> float:
        """Let the held calls go; how many seconds the hold lasted (0 when it was not held)."""
        if not self.held:
            return 0.0
        lasted = time.monotonic() - (self.held_since or time.monotonic())
        self.held, self.held_since = False, None
        return lasted

    async def wait(self, gone: Callable[[], Awaitable[bool]] | None = None) -> bool:
        """Return at once when not held; else when released. False: the caller went away while held
        (``gone`` said so), and the call is not to be sent."""
        if not self.held:
            return True
        self.waiting += 1
        try:
            while self.held:
                if gone is not None and await gone():
                    return False
                await asyncio.sleep(POLL_SECONDS)
            return True
        finally:
            self.waiting -= 1
