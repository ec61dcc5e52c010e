"""A real run's transcript (email env, scripted agent, mock judge, snapshots, a collected file, a secret).

The run is the CLI's, on a real Prefect server (``real_run`` in tests/conftest.py); its report and
the transcript artifact it published are read back here.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from prefect.client.orchestration import PrefectClient
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

from golden_reports import check, steady
from prefect_agentenv.results.task_report import TaskReport
from real_run import PLAN, SECRET, RealRun


@pytest.fixture(scope="module")
def finished(real_run: RealRun) -> tuple[TaskReport, list[Any]]:
    async def artifacts() -> list[Any]:
        async with PrefectClient(real_run.api_url) as client:
            return await client.read_artifacts(artifact_filter=ArtifactFilter(
                flow_run_id=ArtifactFilterFlowRunId(any_=[real_run.report["flow_run_id"]])))

    return TaskReport.model_validate(real_run.report), asyncio.run(artifacts())


def test_the_transcript_shows_the_prompt_each_tool_call_and_the_reply(finished: Any) -> None:
    report, _ = finished
    assert report.outcome.value == "PASSED", report.error
    t = report.transcript
    assert t is not None and [s.id for s in t.steps][:2] == ["email", "inbox"] and len(t.steps) == 8
    (prompt,) = t.prompts
    assert prompt.step_id == "reply" and prompt.agent_name == "assistant" and prompt.mock
    assert prompt.reply.text == PLAN["reply"] and prompt.tool_call_count == 3
    assert [c.name for c in prompt.tool_calls] == ["email_search", "send", "write_file"]
    send = prompt.tool_calls[1]
    assert json.loads(send.arguments.text)["to"] == "dana@northwind.example"
    assert send.result is not None and '"status": "sent"' in send.result.text
    assert [turn.role for turn in prompt.turns] == ["agent"]


def test_the_judges_rows_carry_their_justification_and_a_link_to_its_trajectory(finished: Any) -> None:
    report, _ = finished
    (tone,) = report.transcript.verifiers
    assert tone.step_id == "tone" and tone.score == 1.0 and tone.judge is not None and tone.judge.mock
    assert tone.rows[0].axis == "communication" and "mock judge" in (tone.rows[0].justification or "")
    assert tone.judge.trajectory_url and tone.judge.trajectory_url.endswith("/judges/tone.json")
    assert Path(tone.judge.trajectory_url.removeprefix("file://")).is_file()


def test_env_changes_come_from_the_snapshots_and_files_link_to_the_store(finished: Any) -> None:
    report, _ = finished
    (changes,) = report.transcript.env_changes
    assert (changes.env_id, changes.before_step, changes.after_step) == ("email", "before", "after")
    added = [c for c in changes.changes if c.change == "added"]
    assert [c.path for c in added] == ["sent[msg-1]"] and "Re: Q3 numbers" in added[0].after.text
    (note,) = report.transcript.files
    assert note.name.endswith("q3-notes.md") and Path(note.url.removeprefix("file://")).is_file()


def test_secrets_are_redacted_in_the_transcript_and_its_artifact(finished: Any) -> None:
    report, artifacts = finished
    assert SECRET not in report.model_dump_json()
    assert "***" in report.transcript.prompts[0].prompt.text
    (artifact,) = [a for a in artifacts if a.key == "agentenv-transcript-demo-transcript"]
    assert artifact.type == "markdown" and SECRET not in str(artifact.data)
    for text in ("## Prompt `reply` → agent `assistant`", "`email_search`", "## Verifier `tone`",
                 "judge's trajectory", "## Changes in env `email`", "**added** `sent[msg-1]`", "q3-notes.md"):
        assert text in str(artifact.data), text


def test_the_report_is_unchanged(real_run: RealRun) -> None:
    """The whole report, byte for byte as recorded in tests/golden/ (volatile fields normalised)."""
    home = str(real_run.report_path.parent)
    check("real_run_report.json", steady(real_run.report),
          {home: "<home>", real_run.report["flow_run_id"]: "<flow-run>"})
