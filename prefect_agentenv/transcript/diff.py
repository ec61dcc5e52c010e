"""What changed between two exported states of an env (``data/get`` snapshots).

Envs export JSON: objects of lists of records. Records in a list are matched by their ``id``
(or ``request_id``, ``document_id``, …: the first ``*id`` key they all have), so a sent email
reads as one added record, not as a shifted list.
"""

from __future__ import annotations

import json
from typing import Any

from prefect_agentenv.transcript.models import Clip, RecordChange

MAX_CHANGES = 50
_CLIP = 1000


def diff_states(before: Any, after: Any, path: str = "") -> list[RecordChange]:
    """Every added, removed and changed value from ``before`` to ``after``, records whole."""
    if before == after:
        return []
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[RecordChange] = []
        for key in [*before, *(k for k in after if k not in before)]:
            sub = f"{path}.{key}" if path else str(key)
            if key not in after:
                out.append(_change("removed", sub, before[key], None))
            elif key not in before:
                out.append(_change("added", sub, None, after[key]))
            else:
                out += diff_states(before[key], after[key], sub)
        return out
    if isinstance(before, list) and isinstance(after, list):
        key = _record_key(before + after)
        if key is not None:
            return _diff_records(before, after, key, path)
    return [_change("changed", path or "(state)", before, after)]


def _diff_records(before: list[Any], after: list[Any], key: str, path: str) -> list[RecordChange]:
    old = {str(r[key]): r for r in before}
    new = {str(r[key]): r for r in after}
    out: list[RecordChange] = []
    for rid, record in old.items():
        if rid not in new:
            out.append(_change("removed", f"{path}[{rid}]", record, None))
        elif new[rid] != record:
            out.append(_change("changed", f"{path}[{rid}]", record, new[rid]))
    out += [_change("added", f"{path}[{rid}]", None, r) for rid, r in new.items() if rid not in old]
    return out


def _record_key(items: list[Any]) -> str | None:
    """The id key every item has (unique values), or None when the list is not of records."""
    if not items or not all(isinstance(i, dict) for i in items):
        return None
    candidates = [k for k in items[0] if k == "id" or k.endswith("_id")]
    for key in sorted(candidates, key=lambda k: (k != "id", k)):
        if all(key in i and isinstance(i[key], str | int) for i in items):
            return key
    return None


def _change(kind: str, path: str, before: Any, after: Any) -> RecordChange:
    return RecordChange(change=kind, path=path,  # type: ignore[arg-type]
                        before=None if before is None else Clip.of(_text(before), _CLIP),
                        after=None if after is None else Clip.of(_text(after), _CLIP))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
