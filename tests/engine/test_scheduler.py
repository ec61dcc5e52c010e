"""Engine semantics, run on bare asyncio (the same scheduler the flow uses)."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from prefect_agentenv.documents import validate_data
from prefect_agentenv.flows.agent_task import run_task_document
from prefect_agentenv.results.task_report import TaskReport

pytestmark = pytest.mark.usefixtures("agentenv_home")


def doc(steps: list[dict[str, Any]], task_id: str = "t"):
    result = validate_data(steps, default_id=task_id)
    assert result.ok, [p.render() for p in result.problems]
    return result.document


async def run(steps: list[dict[str, Any]]) -> TaskReport:
    return await run_task_document(doc(steps), execute_in_prefect=False, publish=False)


def trail(report: TaskReport) -> dict[str, Any]:
    return report.context.metadata.model_extra["trail"]


def states(report: TaskReport) -> dict[str, str]:
    return {s.id: s.state for s in report.steps}


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_parallel_branches_overlap_in_time() -> None:
    report = await run([
        {"id": "a", "type": "test_sleep", "seconds": 0.4, "depends_on": []},
        {"id": "b", "type": "test_sleep", "seconds": 0.4, "depends_on": []},
    ])
    a, b = trail(report)["a"], trail(report)["b"]
    assert a["start"] < b["end"] and b["start"] < a["end"], "the two branches did not overlap"
    assert report.duration_s < 0.75


async def test_a_step_starts_as_soon_as_its_own_dependencies_finish() -> None:
    report = await run([
        {"id": "slow", "type": "test_sleep", "seconds": 0.6, "depends_on": []},
        {"id": "fast", "type": "test_sleep", "seconds": 0.05, "depends_on": []},
        {"id": "after_fast", "type": "test_noop", "depends_on": ["fast"]},
    ])
    t = trail(report)
    assert t["after_fast"]["start"] < t["slow"]["end"]


async def test_a_dependent_sees_only_its_ancestors_context() -> None:
    report = await run([
        {"id": "a", "type": "test_noop", "depends_on": []},
        {"id": "b", "type": "test_sleep", "seconds": 0.05, "depends_on": []},
        {"id": "a2", "type": "test_sleep", "seconds": 0.2, "depends_on": ["a"]},
    ])
    # b finished long before a2 ended, yet a2 must not see it.
    assert trail(report)["a2"]["seen"] == ["a"]


async def test_omitted_depends_on_waits_for_every_earlier_step() -> None:
    report = await run([
        {"id": "one", "type": "test_sleep", "seconds": 0.05},
        {"id": "two", "type": "test_sleep", "seconds": 0.05},
        {"id": "three", "type": "test_noop"},
    ])
    t = trail(report)
    assert t["two"]["start"] >= t["one"]["end"]
    assert t["three"]["seen"] == ["one", "two"]


async def test_empty_depends_on_means_no_dependencies() -> None:
    report = await run([
        {"id": "one", "type": "test_sleep", "seconds": 0.3},
        {"id": "two", "type": "test_noop", "depends_on": []},
    ])
    assert trail(report)["two"]["seen"] == []
    assert trail(report)["two"]["start"] < trail(report)["one"]["end"]


async def test_a_tolerated_failure_is_recorded_and_dependents_still_run() -> None:
    report = await run([
        {"id": "a", "type": "test_noop", "depends_on": []},
        {"id": "flaky", "type": "test_fail", "message": "env was grumpy", "depends_on": ["a"],
         "fail_task_on_error": False},
        {"id": "after", "type": "test_noop", "depends_on": ["flaky"]},
    ])
    assert report.status == "completed"
    assert states(report) == {"a": "completed", "flaky": "tolerated", "after": "completed"}
    (row,) = report.context.metadata.failed_steps
    assert row.step_id == "flaky" and row.step_type == "test_fail"
    assert row.error_type == "RuntimeError" and "env was grumpy" in row.error
    assert row.started_at and row.duration_s >= 0
    assert trail(report)["after"]["seen"] == ["a"]


async def test_a_fatal_failure_cancels_in_flight_steps_and_fails_the_run() -> None:
    started = time.monotonic()
    report = await run([
        {"id": "long", "type": "test_sleep", "seconds": 10, "depends_on": []},
        {"id": "boom", "type": "test_fail", "seconds": 0.1, "depends_on": []},
        {"id": "never", "type": "test_noop", "depends_on": ["boom"]},
    ])
    assert time.monotonic() - started < 5
    assert report.status == "failed" and report.outcome.value == "FAILED" and report.score == 0.0
    assert states(report) == {"long": "cancelled", "boom": "failed", "never": "not_run"}
    assert "boom" in (report.error or "")


async def test_a_retry_reruns_the_whole_span_from_retry_from_step_id() -> None:
    report = await run([
        {"id": "deploy", "type": "test_noop", "depends_on": []},
        {"id": "load", "type": "test_noop", "depends_on": ["deploy"]},
        {"id": "side", "type": "test_noop", "depends_on": ["deploy"]},
        {"id": "prompt", "type": "test_fail", "fail_times": 1, "depends_on": ["load"],
         "retry_config": {"retry_from_step_id": "deploy"}},
    ])
    assert report.status == "completed"
    attempts = {s.id: s.attempts for s in report.steps}
    assert attempts == {"deploy": 2, "load": 2, "side": 1, "prompt": 2}


async def test_retries_are_bounded_by_max_retries() -> None:
    report = await run([
        {"id": "a", "type": "test_noop", "depends_on": []},
        {"id": "f", "type": "test_fail", "fail_times": 5, "depends_on": ["a"],
         "retry_config": {"retry_from_step_id": "a", "max_retries": 2}},
    ])
    assert report.status == "failed"
    assert {s.id: s.attempts for s in report.steps} == {"a": 3, "f": 3}


async def test_a_retry_stops_what_the_span_deployed_before_rerunning(tmp_path: Path) -> None:
    marker = tmp_path / "stopped.txt"
    report = await run([
        {"id": "deploy", "type": "test_record", "marker_file": str(marker), "depends_on": []},
        {"id": "use", "type": "test_fail", "fail_times": 1, "depends_on": ["deploy"],
         "retry_config": {"retry_from_step_id": "deploy"}},
    ])
    assert report.status == "completed"
    lines = marker.read_text().splitlines()
    assert len(lines) == 2, "the first instance is stopped before the retry, the second at the end"
    assert all(not pid_alive(int(line.split()[1])) for line in lines)


async def test_teardown_runs_after_a_fatal_failure(tmp_path: Path) -> None:
    marker = tmp_path / "stopped.txt"
    report = await run([
        {"id": "deploy", "type": "test_record", "marker_file": str(marker), "depends_on": []},
        {"id": "boom", "type": "test_fail", "depends_on": ["deploy"]},
    ])
    assert report.status == "failed"
    pid = trail_pid(marker)
    assert not pid_alive(pid)
    assert report.teardown and report.teardown[0].ok is True


def trail_pid(marker: Path) -> int:
    return int(marker.read_text().split()[1])


async def test_teardown_runs_when_the_run_is_cancelled(tmp_path: Path) -> None:
    marker = tmp_path / "stopped.txt"
    task = asyncio.create_task(run([
        {"id": "deploy", "type": "test_record", "marker_file": str(marker), "depends_on": []},
        {"id": "wait", "type": "test_sleep", "seconds": 30, "depends_on": ["deploy"]},
    ]))
    await asyncio.sleep(0.5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert marker.exists(), "teardown did not run on cancellation"
    assert not pid_alive(trail_pid(marker))


async def test_the_report_lists_every_step_with_timing(agentenv_home: Path) -> None:
    report = await run([
        {"id": "a", "type": "test_noop", "depends_on": []},
        {"id": "b", "type": "test_noop"},
    ])
    assert report.task_id == "t" and report.status == "completed" and report.outcome.value == "UNSCORED"
    assert report.score is None
    for s in report.steps:
        assert s.state == "completed" and s.started_at and s.error is None
    written = list((agentenv_home / "runs").glob("*/report.json"))
    assert len(written) == 1
    data = json.loads(written[0].read_text())
    for row in data["steps"]:
        assert set(row) >= {"id", "type", "state", "started_at", "duration_s", "error"}
    assert set(data["context"]) == {"deployed_envs", "deployed_agents", "deployed_sandboxes", "prompt_responses",
                                    "metadata"}


async def test_env_var_values_are_resolved_for_the_step_and_redacted_from_the_report(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGENTENV_TEST_SECRET", "hunter2-very-secret")
    report = await run([
        {"id": "boom", "type": "test_fail", "message": "token ${AGENTENV_TEST_SECRET} rejected",
         "depends_on": [], "fail_task_on_error": False},
    ])
    text = report.model_dump_json()
    assert "hunter2-very-secret" not in text
    assert "token *** rejected" in report.context.metadata.failed_steps[0].error


async def test_an_unset_env_var_without_default_fails_the_step_with_a_clear_error() -> None:
    report = await run([
        {"id": "s", "type": "test_fail", "message": "${AGENTENV_DEFINITELY_UNSET}", "depends_on": []},
    ])
    assert report.status == "failed"
    assert "AGENTENV_DEFINITELY_UNSET is not set" in (report.error or "")


async def test_seeds_fill_placeholders_before_the_run() -> None:
    report = await run_task_document(
        doc([{"id": "s", "type": "test_fail", "message": "hello <name>", "depends_on": [],
              "fail_task_on_error": False}]),
        seeds={"name": "dana"}, execute_in_prefect=False, publish=False)
    assert "hello dana" in report.context.metadata.failed_steps[0].error
