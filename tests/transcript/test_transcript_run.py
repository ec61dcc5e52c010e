"""A real run's transcript: the email env, the scripted agent, a mock-judged rubric, snapshots, files.

One run (about 15 s) in a real Prefect API; every test reads it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

from prefect_agentenv.documents import validate_data
from prefect_agentenv.flows.agent_task import agent_task
from prefect_agentenv.flows.report import TaskReport

from steps.helpers import EXAMPLES, publish_examples

SECRET = "hunter2-transcript-secret"
PLAN = json.loads((EXAMPLES / "plans" / "reply-to-dana.json").read_text())["plan"]


def steps() -> list[dict[str, Any]]:
    return [
        {"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": []},
        {"id": "inbox", "type": "load_artifact", "env_id": "email", "artifact_id": "inbox", "depends_on": ["email"]},
        {"id": "before", "type": "snapshot_env", "env_id": "email", "depends_on": ["inbox"]},
        {"id": "assistant", "type": "deploy_agent", "a2a_agent_id": "scripted", "agent_name": "assistant",
         "env_ids": ["email"], "depends_on": ["email"], "agent_config": {"plan": PLAN}},
        {"id": "reply", "type": "prompt_agent", "agent_name": "assistant", "prompt_id": "reply",
         "prompt": "Reply to Dana. The door code is ${TRANSCRIPT_SECRET}.", "depends_on": ["before", "assistant"]},
        {"id": "after", "type": "snapshot_env", "env_id": "email", "depends_on": ["reply"]},
        {"id": "files", "type": "collect_artifacts", "agent_name": "assistant", "depends_on": ["reply"]},
        {"id": "tone", "type": "rubrics_verifier", "prompt_id": "reply", "verifier_id": "tone", "depends_on": ["reply"],
         "criteria": [{"id": "polite", "criterion": "The email to Dana is polite.", "axis": "communication"}]},
    ]


@pytest.fixture(scope="module")
async def finished(prefect_harness: None, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Run the document once in Prefect; yield the report and the flow run's artifacts."""
    mp = pytest.MonkeyPatch()
    from prefect_agentenv.settings import get_settings

    mp.setenv("PREFECT_AGENTENV_HOME", str(tmp_path_factory.mktemp("transcript-home")))
    mp.setenv("TRANSCRIPT_SECRET", SECRET)
    get_settings.cache_clear()
    try:
        publish_examples()
        result = validate_data(steps(), default_id="transcript-demo")
        assert result.ok and result.document is not None, [p.render() for p in result.problems]
        state = await agent_task(result.document, return_state=True)
        report = TaskReport.model_validate(await state.result(raise_on_failure=False))
        async with get_client() as client:
            artifacts = await client.read_artifacts(artifact_filter=ArtifactFilter(
                flow_run_id=ArtifactFilterFlowRunId(any_=[state.state_details.flow_run_id])))
        yield report, artifacts
    finally:
        mp.undo()
        get_settings.cache_clear()


async def test_the_transcript_shows_the_prompt_each_tool_call_and_the_reply(finished: Any) -> None:
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


async def test_the_judges_rows_carry_their_justification_and_a_link_to_its_trajectory(finished: Any) -> None:
    report, _ = finished
    (tone,) = report.transcript.verifiers
    assert tone.step_id == "tone" and tone.score == 1.0 and tone.judge is not None and tone.judge.mock
    assert tone.rows[0].axis == "communication" and "mock judge" in (tone.rows[0].justification or "")
    assert tone.judge.trajectory_url and tone.judge.trajectory_url.endswith("/judges/tone.json")
    assert Path(tone.judge.trajectory_url.removeprefix("file://")).is_file()


async def test_env_changes_come_from_the_snapshots_and_files_link_to_the_store(finished: Any) -> None:
    report, _ = finished
    (changes,) = report.transcript.env_changes
    assert (changes.env_id, changes.before_step, changes.after_step) == ("email", "before", "after")
    added = [c for c in changes.changes if c.change == "added"]
    assert [c.path for c in added] == ["sent[msg-1]"] and "Re: Q3 numbers" in added[0].after.text
    (note,) = report.transcript.files
    assert note.name.endswith("q3-notes.md") and Path(note.url.removeprefix("file://")).is_file()


async def test_secrets_are_redacted_in_the_transcript_and_its_artifact(finished: Any) -> None:
    report, artifacts = finished
    assert SECRET not in report.model_dump_json()
    assert "***" in report.transcript.prompts[0].prompt.text
    (artifact,) = [a for a in artifacts if a.key == "agentenv-transcript-demo-transcript"]
    assert artifact.type == "markdown" and SECRET not in str(artifact.data)
    for text in ("## Prompt `reply` → agent `assistant`", "`email_search`", "## Verifier `tone`",
                 "judge's trajectory", "## Changes in env `email`", "**added** `sent[msg-1]`", "q3-notes.md"):
        assert text in str(artifact.data), text
