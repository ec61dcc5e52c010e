"""The agent_task flow against a real Prefect API: task runs, final state, artifacts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

from prefect_agentenv.documents import validate_data
from prefect_agentenv.flows.agent_task import agent_task
from prefect_agentenv.run_services import concurrency_slots
from prefect_agentenv.settings import get_settings
from prefect_reads import settled_task_runs, summary_steps

pytestmark = pytest.mark.usefixtures("prefect_harness", "agentenv_home")


def doc(steps: list[dict[str, Any]], task_id: str):
    result = validate_data(steps, default_id=task_id)
    assert result.ok, [p.render() for p in result.problems]
    return result.document


async def test_each_step_is_a_task_run_named_by_its_id_and_tagged_with_its_type_when_a_limit_uses_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report_path = tmp_path / "out" / "report.json"
    async with get_client() as client:
        limit_id = await client.create_global_concurrency_limit(
            GlobalConcurrencyLimitCreate(name="tag:test_sleep", limit=5))
    concurrency_slots.forget_limit_names()  # the listing this process read earlier has no such limit
    try:
        state = await agent_task(
            doc([{"id": "first", "type": "test_noop", "depends_on": []},
                 {"id": "second", "type": "test_sleep", "seconds": 0.01}], "named-steps"),
            report_path=str(report_path), return_state=True)
    finally:
        async with get_client() as client:
            await client.delete_global_concurrency_limit_by_name("tag:test_sleep")
        concurrency_slots.forget_limit_names()
    assert limit_id and state.is_completed()
    report = await state.result()
    assert report["status"] == "completed" and report["flow_run_id"] == str(state.state_details.flow_run_id)
    assert report_path.exists()
    async with get_client() as client:
        runs = await settled_task_runs([state.state_details.flow_run_id], client, at_least=2)
        flow_run = await client.read_flow_run(state.state_details.flow_run_id)
    by_name = {r.name: r for r in runs}
    assert set(by_name) == {"first", "second"}
    # Only the limited step type is tagged (a tag costs a slot request per task run).
    assert by_name["first"].tags == [] and by_name["second"].tags == ["test_sleep"]
    assert all(r.state and r.state.is_completed() for r in runs)
    assert flow_run.name == "named-steps"
    # A step no limit applies to is Running from its first state (its Pending would last milliseconds
    # and cost the server a write); one that may wait for a slot shows that it waited, as Pending.
    async with get_client() as client:
        history = {name: [s.type.value for s in await client.read_task_run_states(run.id)]
                   for name, run in by_name.items()}
    assert history == {"first": ["RUNNING", "COMPLETED"], "second": ["PENDING", "RUNNING", "COMPLETED"]}


async def test_with_tagging_on_every_step_is_tagged_with_its_type(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREFECT_AGENTENV_TAG_TASK_RUNS", "true")
    get_settings.cache_clear()
    try:
        state = await agent_task(doc([{"id": "first", "type": "test_noop", "depends_on": []}], "tagged"),
                                 return_state=True)
    finally:
        monkeypatch.delenv("PREFECT_AGENTENV_TAG_TASK_RUNS")
        get_settings.cache_clear()
    runs = await settled_task_runs([state.state_details.flow_run_id])
    assert [r.tags for r in runs] == [["test_noop"]]


async def test_a_fatal_step_failure_fails_the_flow_run_with_the_report_as_its_data() -> None:
    state = await agent_task(
        doc([{"id": "ok", "type": "test_noop", "depends_on": []},
             {"id": "boom", "type": "test_fail", "message": "no luck", "depends_on": ["ok"]}], "fails"),
        return_state=True)
    assert state.is_failed()
    assert "boom" in (state.message or "") and "no luck" in (state.message or "")
    report = await state.result(raise_on_failure=False)
    assert report["status"] == "failed" and report["outcome"] == "FAILED"
    assert {s["id"]: s["state"] for s in report["steps"]} == {"ok": "completed", "boom": "failed"}


async def test_the_run_publishes_a_summary_with_its_steps_and_a_transcript() -> None:
    state = await agent_task(doc([{"id": "only", "type": "test_noop", "depends_on": []}], "artifacts-task"),
                             return_state=True)
    async with get_client() as client:
        artifacts = await client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[state.state_details.flow_run_id])))
    kinds = {a.key: a.type for a in artifacts}
    assert kinds == {"agentenv-artifacts-task-summary": "markdown", "agentenv-artifacts-task-transcript": "markdown"}
    summary = next(a for a in artifacts if a.key.endswith("-summary"))
    assert "artifacts-task" in str(summary.data) and "UNSCORED" in str(summary.data)
    # The steps table of the summary says what a table artifact of its own said: when, how long, how often.
    assert "| step | type | state | started | duration (s) | attempts | error |" in str(summary.data)
    assert summary_steps(summary.data) == [("only", "completed")]
    [row] = [line for line in str(summary.data).splitlines() if line.startswith("| only |")]
    started, attempts = row.strip("|").split("|")[3].strip(), row.strip("|").split("|")[5].strip()
    assert started[:4].isdigit() and "T" in started and attempts == "1"


async def test_the_flow_run_is_named_after_the_task_and_the_agents_under_test() -> None:
    steps = [{"id": "agent", "type": "deploy_agent", "a2a_agent_id": "no-such-agent", "agent_name": "assistant",
              "depends_on": []}]
    state = await agent_task(doc(steps, "named-run"), overrides={"a2a_agent_id": "also-missing"}, return_state=True)
    assert state.is_failed() and "also-missing" in (state.message or "")
    async with get_client() as client:
        flow_run = await client.read_flow_run(state.state_details.flow_run_id)
    assert flow_run.name == "named-run · also-missing"
