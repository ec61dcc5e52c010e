"""The disk a confined agent writes, bounded (docs/security.md, "What a confined agent sees", limits).

Its sandbox's folders (``/app``, ``/tmp``, ``/home``) are folders of the run on the host's own filesystem: no
tmpfs size or quota bounds them without root and a filesystem that has quotas. So a watcher measures what the
sandbox holds (blocks really used, each inode once, links never followed) every :data:`INTERVAL_SECONDS` while
the agent runs, and stops the agent once it holds more than its ``disk_limit_mb``: the agent's own failure
(``resource_limit``), as its other limits are. Between two looks it can write more, by at most what it writes in
that time; ``prlimit --fsize`` (one file never larger than the bound) takes the kernel's share of the job.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
from collections.abc import Callable
from pathlib import Path

logger = logging.getLogger("prefect_agentenv.runtime.confinement.disk")

DEFAULT_DISK_MB = 10240
INTERVAL_SECONDS = 2.0


def disk_used(root: Path) -> int:
    """Bytes the files under ``root`` take on disk (allocated blocks; hard links counted once; links not
    followed; what vanishes mid-walk skipped)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    pending = [str(root)]
    while pending:
        folder = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if (info.st_dev, info.st_ino) in seen:
                continue
            seen.add((info.st_dev, info.st_ino))
            total += info.st_blocks * 512
            if stat.S_ISDIR(info.st_mode):
                pending.append(entry.path)
    return total


class DiskWatcher:
    """Looks at what a sandbox holds until stopped; calls ``exceeded`` once it holds more than ``limit_mb``."""

    def __init__(self, root: Path, *, limit_mb: int, exceeded: Callable[[], None],
                 interval: float = INTERVAL_SECONDS) -> None:
        self.root = root
        self.limit_mb = limit_mb
        self.interval = interval
        self.hit = False
        """Whether the sandbox went past its bound (the agent was stopped for it)."""
        self._exceeded = exceeded
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._watch(), name=f"disk watcher of {self.root}")

    async def _watch(self) -> None:
        limit = self.limit_mb * 1024 * 1024
        while True:
            used = await asyncio.to_thread(disk_used, self.root)
            if used > limit:
                self.hit = True
                logger.warning("%s holds %d MB, past its disk limit of %d MB: stopping its agent", self.root,
                               used // (1024 * 1024), self.limit_mb)
                self._exceeded()
                return
            await asyncio.sleep(self.interval)

    def stop(self) -> None:
        """Stop looking (synchronous: it runs on cancellation paths too)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, RuntimeError):
            self._task = None
