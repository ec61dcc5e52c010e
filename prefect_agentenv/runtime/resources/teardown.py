"""The teardown registry: every deploy registers how to stop what it started.

The flow runs the registry in a ``finally`` block, so instances are stopped after success,
failure, timeout, cancellation and Ctrl-C. Each stop is bounded in time and best effort; the
outcome of every stop is recorded for the report.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from prefect_agentenv.exceptions import InstanceExitedError

logger = logging.getLogger("prefect_agentenv.teardown")

StopFunction = Callable[[], Awaitable[Any]]
_AFTER_INSTANCES = ("sandbox", "gateway", "client")
"""Kinds stopped after every instance: sandbox folders, the model gateway (the agents it served have
stopped calling it, so its record of the run's calls is whole), then shared clients."""


@dataclass
class TeardownEntry:
    """Something the run started and must stop."""

    label: str
    stop: StopFunction
    owner_step: str | None = None
    kind: str = "instance"
    key: str | None = None
    """What the entry is for, e.g. an env_id or agent_name, so a step can stop it early."""
    done: bool = False


@dataclass
class TeardownRecord:
    """What happened when an entry was stopped."""

    label: str
    kind: str
    owner_step: str | None
    ok: bool
    duration_s: float
    error: str | None = None
    crashed: bool = False
    """The instance had exited on its own before it was stopped (the run counts as FAILED)."""
    exit_code: int | None = None
    limit: str | None = None
    """The resource limit that stopped it, when one did (a confined agent's)."""


@dataclass
class TeardownRegistry:
    """Instances of one run; :meth:`stop_all` stops them together, then sandboxes, then clients."""

    per_entry_timeout: float = 10.0
    entries: list[TeardownEntry] = field(default_factory=list)
    records: list[TeardownRecord] = field(default_factory=list)

    def add(self, label: str, stop: StopFunction, *, owner_step: str | None = None, kind: str = "instance",
            key: str | None = None) -> TeardownEntry:
        entry = TeardownEntry(label, stop, owner_step, kind, key)
        self.entries.append(entry)
        return entry

    def pending(self, *, kind: str | None = None) -> list[TeardownEntry]:
        return [e for e in self.entries if not e.done and (kind is None or e.kind == kind)]

    async def stop(self, entry: TeardownEntry) -> TeardownRecord:
        """Stop one entry now (idempotent), bounded by ``per_entry_timeout``."""
        if entry.done:
            return next(r for r in self.records if r.label == entry.label)
        entry.done = True
        started = time.monotonic()
        error: str | None = None
        exited: InstanceExitedError | None = None
        try:
            # Shielded so a second cancellation (Ctrl-C twice) does not leave a process half-stopped.
            await asyncio.wait_for(asyncio.shield(entry.stop()), self.per_entry_timeout)
        except asyncio.TimeoutError:
            error = f"did not stop within {self.per_entry_timeout:g}s"
        except InstanceExitedError as exc:
            exited, error = exc, str(exc)
        except Exception as exc:  # best effort: one failed stop must not keep the others running
            error = f"{type(exc).__name__}: {exc}"
        record = TeardownRecord(entry.label, entry.kind, entry.owner_step, error is None,
                                round(time.monotonic() - started, 3), error, crashed=exited is not None,
                                exit_code=exited.exit_code if exited else None,
                                limit=exited.limit if exited else None)
        if error:
            logger.warning("teardown of %s failed: %s", entry.label, error)
        self.records.append(record)
        return record

    async def stop_owned_by(self, steps: set[str]) -> list[TeardownRecord]:
        """Stop what the given steps started (before a retry re-runs them)."""
        owned = [e for e in reversed(self.entries) if not e.done and e.owner_step in steps]
        records = [await self.stop(e) for e in owned]
        for record in records:
            record.crashed = False  # the retry replaces the instance: its crash is what the retry is for
        return records

    async def stop_all(self, overall_timeout: float = 30.0) -> list[TeardownRecord]:
        """Stop everything still running, within ``overall_timeout`` in all.

        Instances (envs, agents, models) are stopped all at once: each waits on its own process,
        so one slow stop no longer delays the others. Then the sandboxes they worked in are
        removed, then the model gateway stops, then the run's shared clients are closed newest
        first (a stopping instance may still need them).
        """
        deadline = time.monotonic() + overall_timeout
        pending = [e for e in reversed(self.entries) if not e.done]
        instances = [e for e in pending if e.kind not in _AFTER_INSTANCES]
        sandboxes = [e for e in pending if e.kind == "sandbox"]
        gateways = [e for e in pending if e.kind == "gateway"]
        clients = [e for e in pending if e.kind == "client"]
        for group, together in ((instances, True), (sandboxes, True), (gateways, True), (clients, False)):
            if group and time.monotonic() > deadline:
                self._skip(group)
            elif together:
                await asyncio.gather(*(self.stop(e) for e in group))
            else:
                for entry in group:
                    if time.monotonic() > deadline:
                        self._skip([entry])
                    else:
                        await self.stop(entry)
        return list(self.records)

    def _skip(self, entries: list[TeardownEntry]) -> None:
        for entry in entries:
            entry.done = True
            self.records.append(TeardownRecord(entry.label, entry.kind, entry.owner_step, False, 0.0,
                                               "skipped: the overall teardown time ran out"))
