"""Reports compared with a recorded copy, after the fields that change on every run are normalised.

A report keeps every field and its meaning through a refactor: the golden tests compare a run's
JSON, byte for byte, with the file recorded under ``tests/golden/``. What changes from run to run
(times, durations, ids, ports, temporary paths, hashes of timestamped content, the install
folders a confined agent was shown) becomes a
placeholder first; everything else must be equal.

To record the files again after an intended change of a report:
``AGENTENV_RECORD_GOLDEN=1 .venv/bin/python -m pytest -q -p no:cacheprovider tests/results/test_task_report_golden.py
tests/transcript/test_transcript_run.py``
(and read the diff before committing it).
"""

from __future__ import annotations

import difflib
import json
import os
import re
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).parent / "golden"
RECORD = os.environ.get("AGENTENV_RECORD_GOLDEN") == "1"

# Keys whose values are times or durations (any value is replaced, its type kept).
_VOLATILE_KEYS = re.compile(r"(^|_)(at|s|ms|seconds|time|timestamp|date|duration|elapsed|started|finished|ended|"
                            r"created|updated|sha256|etag|mtime|pid|port|start|end)$")
_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uuid>"),
    (re.compile(r"\b[0-9a-f]{32}\b"), "<hex32>"),
    (re.compile(r"\b[0-9a-f]{64}\b"), "<sha256>"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?"), "<time>"),
    (re.compile(r"(127\.0\.0\.1|localhost):\d+"), r"\1:<port>"),
    # Instance ids and sandbox folders carry a random suffix: email-6a881bb612, assistant-d5fd47af.
    (re.compile(r"\b([A-Za-z][\w.]*)-[0-9a-f]{8,12}\b"), r"\1-<id>"),
    (re.compile(r"(/tmp|/var/folders)/[^\s\"'`)\]]*"), "<tmp>"),
    (re.compile(r"\b\d+(\.\d+)?\s?(s|ms)\b"), "<duration>"),
    # The duration column of the summary's task table (after the outcome column and its notes).
    (re.compile(r"(\| (PASSED|BELOW_ONE|FAILED|TIMED_OUT|UNSCORED)"
                r"( \((agent: |infrastructure: |\d+ attempts)[^|]*\))? \| )\d+(\.\d+)? \|"),
     r"\1<duration> |"),
]


def normalise_text(text: str, replace: dict[str, str] | None = None) -> str:
    """``text`` with run-specific values as placeholders (``replace`` first: exact strings of this run)."""
    for old, new in sorted((replace or {}).items(), key=lambda kv: -len(kv[0])):
        if old:
            text = text.replace(old, new)
    for pattern, placeholder in _PATTERNS:
        text = pattern.sub(placeholder, text)
    return text


def normalise(value: Any, replace: dict[str, str] | None = None, key: str = "") -> Any:
    """A JSON value with volatile members replaced; keys keep their order."""
    if isinstance(value, dict):
        out = {normalise_text(k, replace): normalise(v, replace, k) for k, v in value.items()}
        if isinstance(out.get("size"), int) and out.get("text") != value.get("text"):
            out["size"] = "<int>"  # a clipped text whose volatile parts were replaced
        return out
    if key == "mounts" and isinstance(value, list):
        return ["<where the runner's Python and this package are installed>"] if value else []
    if isinstance(value, list):
        return [normalise(v, replace, key) for v in value]
    if _VOLATILE_KEYS.search(key) and value is not None and not isinstance(value, bool):
        return f"<{type(value).__name__}>"
    if isinstance(value, str):
        return normalise_text(value, replace)
    return value


def in_order(value: dict[str, Any], path: str, key: str) -> None:
    """Sort the list at ``path`` (dotted) by each item's ``key``: for lists whose order is when
    concurrent steps happened to finish (teardown entries, a transcript's steps)."""
    *parents, last = path.split(".")
    for part in parents:
        value = value.get(part) or {}
    if isinstance(value.get(last), list):
        value[last] = sorted(value[last], key=lambda item: str(item.get(key)))


def steady(report: dict[str, Any]) -> dict[str, Any]:
    """A copy of a task report with the lists ordered by when concurrent steps finished put in a fixed order."""
    report = json.loads(json.dumps(report))
    in_order(report, "teardown", "label")
    in_order(report, "transcript.steps", "id")
    return report


def check(name: str, value: Any, replace: dict[str, str] | None = None) -> None:
    """Compare ``value`` (normalised) with ``golden/<name>``; record it instead when asked to."""
    text = json.dumps(normalise(value, replace), indent=1, ensure_ascii=False) + "\n"
    path = GOLDEN / name
    if RECORD:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    recorded = path.read_text(encoding="utf-8")
    if text != recorded:
        diff = "".join(difflib.unified_diff(recorded.splitlines(True), text.splitlines(True), "recorded", "now"))
        raise AssertionError(f"{name} differs from the recorded report (tests/golden_reports.py says how to "
                             f"record it again after an intended change):\n{diff}")
