"""A benchmark's progress artifact, written beside its task runs rather than between them.

The progress bar is one Prefect progress artifact on the benchmark's flow run, updated after every
task run. Each update is an API request; awaited where a task run ends, it held the next task run
back by that round trip (one at a time, as in a warm pool, on every task run). Here one background
writer creates and updates it and sends only the latest share: updates that pile up while one is in
flight go as one request. The bar is a view, so a failed write is logged and the benchmark goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from uuid import UUID

from prefect.artifacts import acreate_progress_artifact, aupdate_progress_artifact

from prefect_agentenv.flows.report import artifact_key

logger = logging.getLogger("prefect_agentenv.benchmark")


class ProgressBar:
    """The progress artifact of one benchmark run (see the module's docstring).

    Made inside the benchmark's flow run (the artifact belongs to it); :meth:`close` waits for the
    last write, :meth:`abandon` drops what is not written yet.
    """

    def __init__(self, slug: str, total: int) -> None:
        self.slug, self.total = slug, max(1, total)
        self.artifact_id: UUID | None = None
        self._latest: int | None = None
        self._sent: int | None = None
        self._failed_create = False
        self._writer: asyncio.Task[None] | None = None

    def set(self, done: int) -> None:
        """Show ``done`` task runs of the total; returns at once."""
        self._latest = done
        if self._writer is None or self._writer.done():
            self._writer = asyncio.ensure_future(self._write())

    async def close(self) -> None:
        """Wait until the latest share is written (or its write failed)."""
        while self._writer is not None and not self._writer.done():
            await asyncio.shield(self._writer)

    async def abandon(self) -> None:
        """Stop writing (the run is being cancelled or failed): nothing more reaches the API."""
        if self._writer is not None and not self._writer.done():
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._writer

    async def _write(self) -> None:
        while not self._failed_create and self._latest is not None and self._latest != self._sent:
            done = self._latest
            progress = 100.0 * done / self.total
            try:
                if self.artifact_id is None:
                    self.artifact_id = await acreate_progress_artifact(
                        progress=progress, key=artifact_key("bench", self.slug, "progress"),
                        description=f"Benchmark {self.slug}: share of task runs done")
                else:
                    await aupdate_progress_artifact(self.artifact_id, progress=progress)
            except Exception as exc:  # noqa: BLE001 - the bar is a view; the benchmark goes on without it
                if self.artifact_id is None:
                    self._failed_create = True
                    logger.warning("could not create the progress artifact: %s", exc)
                else:
                    logger.warning("could not update the progress artifact: %s", exc)
            self._sent = done
