"""A benchmark run's control log: every change an operator made while it ran, beside its results.

``control.jsonl`` sits in the run's folder next to ``results.jsonl``, one :class:`ControlChange`
per line, appended by the benchmark's process (the run's one writer) as it applies each change:
who made it (``user@host``, or ``the Prefect UI`` for an edit of the run's control Variable),
when, what, the value before and after, and why. A resumed run appends to the same file, so a
run paused on Monday and resumed on Tuesday keeps Monday's record. The summary, the HTML report
and the flow run's control artifact are views of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError

from prefect_agentenv.artifacts import ArtifactBackend, ArtifactNotFoundError

CONTROL_LOG = "control.jsonl"
"""The control log's file name in a run's folder."""

ChangeKind = Literal["pause", "resume", "set", "requeue", "cancel", "refused", "start"]
"""``start``: the run's settings when it started (or was resumed); ``refused``: a change that was
not applied (an invalid value, a task run not found), with why."""


class ControlChange(BaseModel):
    """One change of a running benchmark, as applied (or refused) by its dispatcher."""

    model_config = ConfigDict(extra="ignore")

    at: str
    """When it was applied, ISO 8601 in UTC (``2026-01-05T09:00:00Z``)."""
    by: str
    """Who asked for it: ``user@host`` from the CLI, ``the Prefect UI`` for an edit of the Variable."""
    kind: ChangeKind
    what: str
    """The setting (``concurrency``, ``paused``, ``limit_tokens``…) or the task run it acted on."""
    old: JsonValue = None
    new: JsonValue = None
    reason: str | None = None
    """The operator's ``--reason`` (or the Variable's ``reason`` member), when given."""
    detail: str | None = None
    """What the dispatcher did: the task runs requeued, why a change was refused."""

    def line(self) -> str:
        """One line for a log, a table cell or the terminal: ``03:12:09Z pause by ana@box: paused false → true (throttled)``."""
        change = f"{_shown(self.old)} → {_shown(self.new)}" if self.kind in ("set", "pause", "resume", "start") else ""
        text = f"{self.at[11:] or self.at} {self.kind} {self.what}" + (f": {change}" if change else "")
        text += f" by {self.by}" + (f" ({self.reason})" if self.reason else "")
        return text + (f" — {self.detail}" if self.detail else "")


def _shown(value: JsonValue) -> str:
    return "none" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def control_log_key(folder: str) -> str:
    """The control log's key in the run folder ``folder`` (``benchmarks/<slug>/<run_id>``)."""
    return f"{folder}/{CONTROL_LOG}"


def append_changes(store: ArtifactBackend, folder: str, changes: Sequence[ControlChange]) -> None:
    """Add changes to the run's control log (one writer: the run's benchmark process)."""
    if changes:
        text = "".join(change.model_dump_json() + "\n" for change in changes)
        store.append_object(control_log_key(folder), text.encode())


def read_changes(store: ArtifactBackend, folder: str) -> list[ControlChange]:
    """The run's control log, oldest first ([] when nothing was changed); an unreadable line is skipped
    (a log written by a later version with a kind this one does not know)."""
    try:
        raw = store.get_object(control_log_key(folder)).decode()
    except ArtifactNotFoundError:
        return []
    changes: list[ControlChange] = []
    for line in raw.splitlines():
        if line.strip():
            try:
                changes.append(ControlChange.model_validate_json(line))
            except ValidationError:
                continue
    return changes


def changes_markdown(changes: Sequence[ControlChange]) -> str:
    """The summary's section on the run's changes (empty when an operator changed nothing)."""
    shown = [c for c in changes if c.kind != "start"]
    if not shown:
        return ""
    rows = ["| when (UTC) | change | setting or task run | old → new | by | why |", "|---|---|---|---|---|---|"]
    for c in shown:
        moved = f"{_shown(c.old)} → {_shown(c.new)}" if c.old is not None or c.new is not None else ""
        why = " — ".join(p for p in (c.reason, c.detail) if p)
        rows.append(f"| {c.at} | {c.kind} | {_cell(c.what)} | {_cell(moved)} | {_cell(c.by)} | {_cell(why)} |")
    return "## Changes during the run\n\n" + "\n".join(rows) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
