"""A run's control log: appended beside its results, read back oldest first, shown in the summary."""

from __future__ import annotations

from pathlib import Path

from prefect_agentenv.artifacts.local import LocalArtifactBackend
from prefect_agentenv.results.control_log import ControlChange, append_changes, changes_markdown, read_changes

FOLDER = "benchmarks/nightly/r1"


def test_changes_are_kept_in_order_a_resume_appends_and_an_unreadable_line_is_skipped(tmp_path: Path) -> None:
    store = LocalArtifactBackend(tmp_path)
    assert read_changes(store, FOLDER) == []
    first = [ControlChange(at="2026-01-05T09:00:00Z", by="ana@box", kind="start", what="settings",
                           new={"concurrency": 1}),
             ControlChange(at="2026-01-05T09:01:00Z", by="ana@box", kind="pause", what="paused", old=False, new=True,
                           reason="provider throttling")]
    append_changes(store, FOLDER, first)
    store.append_object(f"{FOLDER}/control.jsonl", b'{"at": "x", "kind": "teleport"}\n')  # a later version's kind
    later = ControlChange(at="2026-01-06T08:00:00Z", by="the Prefect UI", kind="set", what="concurrency", old=1, new=4)
    append_changes(store, FOLDER, [later])  # the run resumed the next day
    assert read_changes(store, FOLDER) == [*first, later]


def test_the_summary_lists_each_change_but_the_start_with_its_time_who_and_why() -> None:
    changes = [ControlChange(at="2026-01-05T09:00:00Z", by="ana@box", kind="start", what="settings"),
               ControlChange(at="2026-01-05T09:01:00Z", by="ana@box", kind="pause", what="paused", old=False,
                             new=True, reason="a | b"),
               ControlChange(at="2026-01-05T09:02:00Z", by="ana@box", kind="cancel", what="triage/0/3",
                             detail="stopped and torn down")]
    markdown = changes_markdown(changes)
    assert markdown.startswith("## Changes during the run")
    assert "| 2026-01-05T09:01:00Z | pause | paused | false → true | ana@box | a \\| b |" in markdown
    assert "| 2026-01-05T09:02:00Z | cancel | triage/0/3 |  | ana@box | stopped and torn down |" in markdown
    assert "settings" not in markdown
    assert changes_markdown(changes[:1]) == ""
    assert changes[1].line() == "09:01:00Z pause paused: false → true by ana@box (a | b)"
