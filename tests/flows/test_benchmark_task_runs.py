"""``task_runs_as: tasks``: a benchmark's task runs recorded as Prefect task runs of its flow run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
import yaml
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
from prefect.client.schemas.filters import (
    ArtifactCollectionFilter,
    ArtifactCollectionFilterKey,
    ArtifactFilter,
    ArtifactFilterTaskRunId,
    FlowRunFilter,
    FlowRunFilterParentFlowRunId,
    LogFilter,
    LogFilterTaskRunId,
)

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.documents.benchmarks.validation import validate_benchmark_data
from prefect_agentenv.flows.benchmark import benchmark
from prefect_agentenv.results.store.run_store import read_results
from prefect_agentenv.results.task_report import TaskReport
from prefect_agentenv.run_services import concurrency_slots
from prefect_reads import flushed_logs, settled_task_runs, summary_steps

pytestmark = pytest.mark.usefixtures("prefect_harness", "agentenv_home")


def _task(task_id: str, score: float, *, failing: bool = False) -> dict[str, Any]:
    steps: list[dict[str, Any]] = [{"id": "work", "type": "test_noop"},
                                   {"id": "grade", "type": "test_score", "score": score, "depends_on": ["work"]}]
    if failing:  # an unset ${VAR}: the run does not start and its report says failed
        steps[0] = {"id": "work", "type": "test_record", "marker_file": "${TASK_RUNS_UNSET_DIR}/m.txt"}
    return {"id": task_id, "tags": ["unit"], "steps": steps}


async def test_each_task_run_is_a_named_task_run_of_the_benchmark_with_its_report_state_and_artifacts(
        tmp_path: Path) -> None:
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump({"name": "Tasks", "slug": "as-tasks", "concurrency": 2, "task_runs_as": "tasks",
                                    "tasks": [_task("alpha", 1.0), _task("beta", 0.5),
                                              _task("gamma", 1.0, failing=True)]}))
    async with get_client() as client:  # a limit on the benchmark's tag: its task runs carry that tag
        await client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name="tag:benchmark:as-tasks",
                                                                                  limit=2))
    concurrency_slots.forget_limit_names()
    try:
        state = await benchmark(path=str(path), return_state=True)
    finally:
        async with get_client() as client:
            await client.delete_global_concurrency_limit_by_name("tag:benchmark:as-tasks")
        concurrency_slots.forget_limit_names()
    out = await state.result(raise_on_failure=False)
    assert state.is_completed(), state.message
    flow_run_id = state.state_details.flow_run_id
    with get_artifact_store() as store:
        results = {r.task_id: r for r in read_results(store, "as-tasks", out["run_id"])}
        reports = {k: TaskReport.model_validate_json(store.get_object(f"{r.task_run_id}/report.json"))
                   for k, r in results.items()}
    assert {k: r.outcome.value for k, r in results.items()} == {"alpha": "PASSED", "beta": "BELOW_ONE",
                                                                 "gamma": "FAILED"}
    assert all(r.flow_run_id == str(flow_run_id) and r.task_run_id for r in results.values())
    assert reports["beta"].score == 0.5 and "TASK_RUNS_UNSET_DIR" in (reports["gamma"].error or "")
    assert all(r.report_url and r.task_run_id and r.task_run_id in r.report_url for r in results.values())

    runs = await settled_task_runs([flow_run_id], at_least=3)
    by_name = {r.name: r for r in runs}
    assert set(by_name) == {"alpha · epoch 0", "beta · epoch 0", "gamma · epoch 0"}
    assert {str(r.id) for r in runs} == {r.task_run_id for r in results.values()}
    assert [by_name[f"{k} · epoch 0"].state_type.value for k in ("alpha", "beta", "gamma")] == [
        "COMPLETED", "COMPLETED", "FAILED"]
    # Only the tag a limit uses (each tag costs a slot request per task run).
    assert all(r.tags == ["benchmark:as-tasks"] for r in runs)
    async with get_client() as client:
        children = await client.read_flow_runs(
            flow_run_filter=FlowRunFilter(parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[flow_run_id])))
        alpha = by_name["alpha · epoch 0"].id
        artifacts = await client.read_artifacts(
            artifact_filter=ArtifactFilter(task_run_id=ArtifactFilterTaskRunId(any_=[alpha])))
        tasks_table = await client.read_latest_artifacts(  # by key: the session's server holds more than a page
            artifact_filter=ArtifactCollectionFilter(key=ArtifactCollectionFilterKey(any_=["bench-as-tasks-tasks"])))
    assert children == []  # no subflow: that is the point
    [summary] = [a for a in artifacts if a.key and a.key.endswith("-summary")]
    assert summary_steps(summary.data) == [("work", "completed"), ("grade", "completed")]
    [table] = [a for a in tasks_table if a.key == "bench-as-tasks-tasks"]
    links = {row["task"]: row["flow_run"] for row in json.loads(str(table.data))}
    assert links["alpha"] and links["alpha"].endswith(f"/runs/task-run/{alpha}")
    assert isinstance(alpha, UUID)
    gamma = by_name["gamma · epoch 0"].id  # the run's log lines land on its task run (INFO is off in tests)
    logs = await flushed_logs(LogFilter(task_run_id=LogFilterTaskRunId(any_=[gamma])))
    assert any("TASK_RUNS_UNSET_DIR" in line.message for line in logs), [line.message for line in logs]
    assert not any('"steps"' in line.message for line in logs)  # the report is not dumped into a log line


def test_step_task_runs_true_with_task_runs_as_tasks_is_a_validation_error_naming_both_fields() -> None:
    result = validate_benchmark_data({"name": "B", "slug": "b", "task_runs_as": "tasks", "step_task_runs": True,
                                      "tasks": [_task("alpha", 1.0)]}, ".")
    assert result.benchmark is None
    assert any("step_task_runs" in str(p) and "task_runs_as" in str(p) for p in result.problems)
    implied = validate_benchmark_data({"name": "B", "slug": "b", "task_runs_as": "tasks",
                                       "tasks": [_task("alpha", 1.0)]}, ".")
    assert implied.benchmark is not None and not implied.problems
    wrong = validate_benchmark_data({"name": "B", "slug": "b", "task_runs_as": "flows",
                                     "tasks": [_task("alpha", 1.0)]}, ".")
    assert any("task_runs_as" in str(p) for p in wrong.problems)


async def test_a_task_run_past_its_timeout_is_timed_out_and_its_task_run_ends(tmp_path: Path) -> None:
    path = tmp_path / "slow.yaml"
    path.write_text(yaml.safe_dump({"name": "Slow", "slug": "slow-tasks", "task_runs_as": "tasks", "tasks": [
        {"id": "slow", "timeout_seconds": 1, "steps": [{"id": "wait", "type": "test_sleep", "seconds": 30}]}]}))
    state = await benchmark(path=str(path), return_state=True)
    out = await state.result(raise_on_failure=False)
    assert out["counts"]["timed_out"] == 1 and out["summary"]["mean_score"] == 0.0
    [run] = await settled_task_runs([state.state_details.flow_run_id], at_least=1)
    assert run.name == "slow · epoch 0" and run.state and run.state.is_final() and not run.state.is_completed()


def test_a_review_step_under_task_runs_as_tasks_is_refused_with_the_task_and_step() -> None:
    task = {"id": "gated", "steps": [{"id": "work", "type": "test_noop"},
                                     {"id": "approve", "type": "review", "depends_on": ["work"]}]}
    result = validate_benchmark_data({"name": "B", "slug": "b", "task_runs_as": "tasks", "tasks": [task]}, ".")
    [problem] = result.problems
    assert problem.step_id == "approve" and "gated" in problem.message and problem.path == "$.task_runs_as"
    assert validate_benchmark_data({"name": "B", "slug": "b", "tasks": [task]}, ".").benchmark is not None
