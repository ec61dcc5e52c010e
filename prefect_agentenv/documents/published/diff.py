"""What differs between two versions of a benchmark, task by task, in a few words each.

Used when a publish is refused (other content under a published version) and by
``publish --check`` (the files against their published version). Each line starts with what
it is about: ``task <id>: ...`` first, then the settings, the seed rows and the artifact pins.
A changed task says which steps were added, removed or changed, and which fields of a changed
step, with short values, so a reader knows where to look without a full diff.
"""

from __future__ import annotations

import json
from typing import Any

from prefect_agentenv.documents.published.snapshot import PublishedBenchmark, PublishedTask

_SHORT = 40
"""Longest value shown in a line; longer ones are cut."""
_MISSING = object()
"""A member one side does not write: the default (documents are stored without their defaults)."""
_TASK_FIELDS = ("tags", "timeout_seconds", "weight", "seed_row", "criteria", "source")
"""Members of a published task besides its document that change how it runs or is scored."""


def differences(published: PublishedBenchmark, other: PublishedBenchmark) -> list[str]:
    """What ``other`` changes against ``published`` (empty when their content is the same)."""
    lines = _task_lines(published, other)
    lines += [f"settings: {line}" for line in _changed(published.settings, other.settings)]
    if published.seed_rows != other.seed_rows:
        lines.append(f"seed rows: {len(published.seed_rows)} → {len(other.seed_rows)} row(s)"
                     if len(published.seed_rows) != len(other.seed_rows) else "seed rows: values changed")
    lines += _artifact_lines(published, other)
    if not lines and published.hash != other.hash:
        lines.append("the records differ in a member this version does not compare")
    return lines


def differing_tasks(published: PublishedBenchmark, other: PublishedBenchmark) -> list[str]:
    """Ids of the tasks added, removed or changed, in the published order, then the new ones."""
    before = {t.task_id: t for t in published.tasks}
    after = {t.task_id: t for t in other.tasks}
    changed = [tid for tid in before if tid not in after or _task_changes(before[tid], after[tid])]
    return changed + [tid for tid in after if tid not in before]


def _task_lines(published: PublishedBenchmark, other: PublishedBenchmark) -> list[str]:
    before = {t.task_id: t for t in published.tasks}
    after = {t.task_id: t for t in other.tasks}
    lines = []
    for task_id in differing_tasks(published, other):
        if task_id not in after:
            lines.append(f"task {task_id}: removed")
        elif task_id not in before:
            lines.append(f"task {task_id}: added")
        else:
            lines.append(f"task {task_id}: changed (sha256 {before[task_id].sha256[:12]}… → "
                         f"{after[task_id].sha256[:12]}…): " + "; ".join(_task_changes(before[task_id], after[task_id])))
    return lines


def _task_changes(before: PublishedTask, after: PublishedTask) -> list[str]:
    changes = [f"{name} {_short(getattr(before, name))} → {_short(getattr(after, name))}"
               for name in _TASK_FIELDS if getattr(before, name) != getattr(after, name)]
    if before.sha256 == after.sha256:
        return changes
    old_steps, new_steps = _steps(before.document), _steps(after.document)
    for step_id in old_steps:
        if step_id not in new_steps:
            changes.append(f"step {step_id} removed")
        elif old_steps[step_id] != new_steps[step_id]:
            changes.append(f"step {step_id}: " + ", ".join(_changed(old_steps[step_id], new_steps[step_id])))
    changes += [f"step {step_id} added" for step_id in new_steps if step_id not in old_steps]
    if list(old_steps) != list(new_steps) and set(old_steps) == set(new_steps):
        changes.append("steps reordered")
    rest = {k: v for k, v in before.document.items() if k != "steps"}
    changes += [f"document: {line}" for line in _changed(rest, {k: v for k, v in after.document.items()
                                                                 if k != "steps"})]
    return changes or ["the document changed"]


def _steps(document: dict[str, Any]) -> dict[str, Any]:
    steps = document.get("steps")
    return {str(s.get("id")): s for s in steps if isinstance(s, dict)} if isinstance(steps, list) else {}


def _artifact_lines(published: PublishedBenchmark, other: PublishedBenchmark) -> list[str]:
    before = {(a.id, a.written): a.version for a in published.artifacts}
    after = {(a.id, a.written): a.version for a in other.artifacts}
    lines = []
    for key in sorted(before.keys() | after.keys()):
        name = key[0] if key[1] == "latest" else f"{key[0]}@{key[1]}"
        if before.get(key) != after.get(key):
            lines.append(f"artifact {name}: pinned to {before.get(key) or 'nothing'} → {after.get(key) or 'nothing'}")
    return lines


def _changed(before: Any, after: Any, prefix: str = "", depth: int = 2) -> list[str]:
    """``path: old → new`` for each member that differs, descending ``depth`` levels into objects."""
    if before == after:
        return []
    if depth > 0 and isinstance(before, dict) and isinstance(after, dict):
        out: list[str] = []
        for key in [*before, *(k for k in after if k not in before)]:
            out += _changed(before.get(key, _MISSING), after.get(key, _MISSING), f"{prefix}{key}.", depth - 1)
        return out
    return [f"{prefix.rstrip('.') or 'value'} {_short(before)} → {_short(after)}"]


def _short(value: Any) -> str:
    if value is _MISSING:
        return "default"
    if value is None:
        return "null"
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= _SHORT else text[:_SHORT - 1] + "…"
