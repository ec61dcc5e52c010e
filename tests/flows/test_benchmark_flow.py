"""The benchmark flow against a Prefect API: subflows, results, resume, compare, artifacts."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    ArtifactFilter,
    ArtifactFilterFlowRunId,
    FlowRunFilter,
    FlowRunFilterId,
    FlowRunFilterParentFlowRunId,
)
from prefect.events.filters import EventFilter, EventNameFilter
from prefect.events.worker import EventsWorker

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.flows.agent_task import agent_task
from prefect_agentenv.flows.benchmark import benchmark
from prefect_agentenv.results.store.run_store import read_results
from prefect_reads import settled_task_runs, summary_steps

pytestmark = pytest.mark.usefixtures("prefect_harness", "agentenv_home")


def write_bench(tmp_path: Path, scores: dict[str, float], *, failing: str | None = None, epochs: int = 1) -> Path:
    tasks: list[dict[str, Any]] = []
    for task_id, score in scores.items():
        steps: list[dict[str, Any]] = [{"id": "work", "type": "test_noop", "depends_on": []},
                                       {"id": "grade", "type": "test_score", "score": score}]
        if task_id == failing:
            # Fails while RESUME_TEST_DIR is unset: the frozen document is the same on both runs.
            steps.insert(1, {"id": "setup", "type": "test_record", "marker_file": "${RESUME_TEST_DIR}/m.txt"})
        tasks.append({"id": task_id, "steps": steps, "tags": ["unit", task_id]})
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump({"name": "Unit bench", "slug": "unit-bench", "epochs": epochs,
                                    "concurrency": 2, "tasks": tasks}))
    return path


async def run(path: Path, **params: Any) -> tuple[Any, dict[str, Any]]:
    state = await benchmark(path=str(path), return_state=True, **params)
    return state, await state.result(raise_on_failure=False)


async def test_every_task_and_epoch_runs_as_an_agent_task_subflow_with_results_and_artifacts(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    state, out = await run(write_bench(tmp_path, {"alpha": 1.0, "beta": 0.5}, epochs=2))
    assert state.is_completed(), state.message
    assert "changed since" not in caplog.text, "a later epoch runs the very document the first one froze"
    assert out["counts"]["total"] == 4 and out["summary"]["pass_at_k"] == pytest.approx(0.5)
    with get_artifact_store() as store:
        results = read_results(store, "unit-bench", out["run_id"])
    assert sorted((r.task_id, r.epoch, r.outcome.value) for r in results) == [
        ("alpha", 0, "PASSED"), ("alpha", 1, "PASSED"), ("beta", 0, "BELOW_ONE"), ("beta", 1, "BELOW_ONE")]
    assert all(r.snapshot and len(r.snapshot.sha256) == 64 for r in results)
    assert results[0].axis_scores == {"correctness": pytest.approx(results[0].score)}
    flow_run_id = state.state_details.flow_run_id
    assert out["run_id"] == str(flow_run_id)  # so the UI's Retry of this flow run resumes it
    async with get_client() as client:
        children = await client.read_flow_runs(
            flow_run_filter=FlowRunFilter(parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[flow_run_id])))
        artifacts = await client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])))
    assert len(children) == 4 and all(c.state and c.state.is_completed() for c in children)
    assert {c.name for c in children} == {"alpha · epoch 0", "alpha · epoch 1", "beta · epoch 0", "beta · epoch 1"}
    assert all("benchmark:unit-bench" in c.tags for c in children)
    kinds = {a.type for a in artifacts}
    assert {"markdown", "table", "progress"} <= kinds
    assert {"bench-unit-bench-verifications", "bench-unit-bench-report"} <= {a.key for a in artifacts}
    summary = next(a for a in artifacts if a.key == "bench-unit-bench-summary")
    assert "Mean score" in str(summary.data) and "alpha" in str(summary.data)
    table = next(a for a in artifacts if a.key == "bench-unit-bench-tasks")
    child_pages = {f"/runs/flow-run/{c.id}" for c in children}
    rows = json.loads(table.data) if isinstance(table.data, str) else table.data
    assert {row["flow_run"][row["flow_run"].index("/runs/"):] for row in rows} == child_pages
    assert all(f"/runs/flow-run/{c.id})" in str(summary.data) for c in children)


async def test_a_resumed_run_reruns_only_missing_or_errored_tasks(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RESUME_TEST_DIR", raising=False)
    path = write_bench(tmp_path, {"alpha": 1.0, "beta": 1.0}, failing="beta")
    state, first = await run(path)
    assert first["counts"]["failed"] == 1
    monkeypatch.setenv("RESUME_TEST_DIR", str(tmp_path))
    write_bench(tmp_path, {"alpha": 0.0, "beta": 1.0})  # edits after the run started are not picked up
    _, second = await run(path, run_id=first["run_id"])
    with get_artifact_store() as store:
        results = read_results(store, "unit-bench", first["run_id"])
    assert [r.task_id for r in results].count("alpha") == 1, "a completed task is not run again"
    assert [r.task_id for r in results].count("beta") == 2
    assert second["counts"]["passed"] == 2


async def test_a_run_is_compared_with_the_previous_run_pair_by_pair_and_regressions_are_flagged(
        tmp_path: Path) -> None:
    first_state, first = await run(write_bench(tmp_path, {"alpha": 1.0, "beta": 1.0}, epochs=6))
    state, out = await run(write_bench(tmp_path, {"alpha": 1.0, "beta": 0.0}, epochs=6))
    assert state.is_completed()
    # beta passed its 6 epochs and fails them now: McNemar's exact p = 2/64 for the task, 2/64 overall.
    assert out["regressed_tasks"] == ["beta"]
    assert out["regressions"][0].startswith("all task runs worse: pass rate 100% → 50% over 12 pairs (6 lost")
    assert any(r.startswith("task beta [seed 0] worse") for r in out["regressions"])
    comparison = out["comparison"]
    assert comparison["previous_run_id"] == first["run_id"] and comparison["pairs"] == 12
    assert comparison["overall"]["pass_fail"]["p_value"] == pytest.approx(2 / 64)
    assert f"Compared with run `{first['run_id']}`" in out["markdown"] and "6 lost, 0 gained" in out["markdown"]
    # The test steps deploy no agent: the setups are the benchmark's own, and the task documents changed.
    assert comparison["setup"]["known"] and [d["field"] for d in comparison["setup"]["differences"]] == [
        "task documents"]
    event = await wait_for_event("prefect-agentenv.benchmark.regressed", out["run_id"])
    assert event.resource.id == "prefect-agentenv.benchmark.unit-bench"
    assert event.payload["slug"] == "unit-bench" and event.payload["previous_score"] == 1.0
    assert event.payload["score"] == 0.5 and event.payload["regressed_tasks"][0]["task_id"] == "beta"
    assert event.payload["regressed"] is True and "task documents" in event.payload["setup"]
    assert any(r.id == f"prefect.flow-run.{state.state_details.flow_run_id}" for r in event.related)


async def wait_for_event(name: str, run_id: str, timeout: float = 30.0) -> Any:
    """The event ``name`` of benchmark run ``run_id``, once the server has stored it (it batches writes)."""
    await EventsWorker.drain_all(timeout=10)  # type: ignore[misc]
    deadline = asyncio.get_running_loop().time() + timeout
    async with get_client() as client:
        while True:
            page = await client.read_events(EventFilter(event=EventNameFilter(name=[name])), limit=50)
            found = [e for e in page.events if e.payload.get("run_id") == run_id]
            if found or asyncio.get_running_loop().time() > deadline:
                assert found, f"no {name} event for run {run_id}"
                return found[0]
            await asyncio.sleep(0.5)


async def test_a_task_past_its_timeout_is_timed_out_with_score_zero(tmp_path: Path) -> None:
    path = tmp_path / "slow.yaml"
    path.write_text(yaml.safe_dump({"name": "Slow", "slug": "slow-bench", "tasks": [
        {"id": "slow", "timeout_seconds": 1, "steps": [{"id": "wait", "type": "test_sleep", "seconds": 30}]}]}))
    state, out = await run(path)
    result = out["summary"]
    assert out["counts"]["timed_out"] == 1 and result["mean_score"] == 0.0


async def test_a_benchmark_without_step_task_runs_records_its_steps_in_the_report_and_artifacts_only(
        tmp_path: Path) -> None:
    bench = write_bench(tmp_path, {"lean": 1.0})
    data = yaml.safe_load(bench.read_text())
    data |= {"slug": "lean-bench", "step_task_runs": False}
    bench.write_text(yaml.safe_dump(data))
    state, out = await run(bench)
    assert state.is_completed(), state.message
    # A run with step task runs after it: once its task runs are recorded, the events of the lean
    # subflow (sent before) have been recorded too, so none missing below is not just late.
    recorded = await agent_task(task={"id": "recorded", "steps": [{"id": "work", "type": "test_noop"}]},
                                return_state=True)
    await settled_task_runs([recorded.state_details.flow_run_id], at_least=1)
    async with get_client() as client:
        [child] = await client.read_flow_runs(flow_run_filter=FlowRunFilter(
            parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[state.state_details.flow_run_id])))
        child_task_runs = await client.read_task_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[child.id])))
        child_artifacts = await client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[child.id])))
    assert child.state and child.state.is_completed()
    assert child_task_runs == []
    with get_artifact_store() as store:
        [result] = read_results(store, "lean-bench", out["run_id"])
    assert result.outcome.value == "PASSED" and result.score == 1.0
    [summary] = [a for a in child_artifacts if a.key and a.key.endswith("-summary")]
    assert summary_steps(summary.data) == [("work", "completed"), ("grade", "completed")]


async def test_a_baseline_that_is_not_in_the_store_fails_the_flow_run_before_any_task_runs(tmp_path: Path) -> None:
    state, _ = await run(write_bench(tmp_path, {"alpha": 1.0}), baseline="no-such-run", fail_on_regression=True)
    assert state.is_failed() and state.message.startswith("baseline: no benchmark run 'no-such-run'")
    with get_artifact_store() as store:
        assert read_results(store, "unit-bench", str(state.state_details.flow_run_id)) == []


def test_the_gate_is_a_deployment_parameter() -> None:
    """A deployment's Run form and `prefect deployment run --param` take what `bench` takes as options."""
    properties = benchmark.parameters.properties
    assert {"baseline", "confidence", "fail_under", "fail_on_regression", "budget", "record_model_calls",
            "replay"} <= properties.keys()
    assert properties["fail_under"]["anyOf"][0]["maximum"] == 1
    assert "McNemar" in properties["fail_on_regression"]["description"]
