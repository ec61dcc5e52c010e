"""Prefect API trouble, injected by a loopback proxy in front of the session's real Prefect server:
503s on task-run creation during a benchmark (past the client's retries: an infrastructure failure
the benchmark runs again), and the API going away in the middle of a CLI run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.results.store.run_store import read_results

from .api_proxy import ApiProxy, api_proxy
from .harness import CLI, flow_run_states, start_cli, wait_until_gone


@pytest.fixture
def proxy(api_url: str) -> Iterator[ApiProxy]:
    with api_proxy(api_url) as running:
        yield running


def test_a_task_run_that_503s_past_the_clients_retries_is_an_infrastructure_failure_the_benchmark_runs_again(
        proxy: ApiProxy, agentenv_home: Path, tmp_path: Path) -> None:
    tasks = [{"id": f"t{i}", "steps": [{"id": "grade", "type": "test_score", "score": 1.0}]} for i in range(3)]
    bench = tmp_path / "bench.yaml"
    bench.write_text(yaml.safe_dump({"name": "Api faults", "slug": "api-faults", "concurrency": 1, "tasks": tasks,
                                     "infrastructure": {"retries": 2, "backoff_seconds": 0.1}}))
    # With 2 retries a call is tried 3 times: the first task run's creation fails every time, the
    # first artifact once (then Prefect's retry gets through).
    proxy.fail("POST", "/api/task_runs/", 3, retry_after=0.1)
    proxy.fail("POST", "/api/artifacts/", 1, retry_after=0.1)
    env = {**os.environ, "PREFECT_API_URL": proxy.url, "PREFECT_AGENTENV_HOME": str(agentenv_home),
           "PREFECT_CLIENT_MAX_RETRIES": "2", "PREFECT_LOGGING_LEVEL": "WARNING"}
    done = subprocess.run([sys.executable, str(CLI), "bench", str(bench), "--report-dir", str(tmp_path / "out")],
                          env=env, text=True, capture_output=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert len(proxy.failed) == 4
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    with get_artifact_store() as store:
        results = {r.task_id: r for r in read_results(store, "api-faults", summary["run_id"])}
    assert sorted(results) == ["t0", "t1", "t2"]
    assert all(r.outcome.value == "PASSED" and r.failure is None for r in results.values())
    (retried,) = [r for r in results.values() if r.attempts > 1]
    assert retried.attempts == 2 and retried.flow_run_id
    (first,) = retried.retried
    assert (first.failure.kind, first.failure.reason, first.failure.retryable) == ("infrastructure", "prefect_api", True)
    assert first.failure.error_type == "PrefectHTTPStatusError" and "503" in (first.failure.message or "")
    assert first.flow_run_id is None  # the subflow never got a flow run; the retry is a new one
    assert summary["counts"]["total"] == 3 and "3/3 passed" in summary["headline"]
    assert summary["summary"]["failures"]["retried"] == 1 and summary["summary"]["failures"]["recovered"] == 1


def test_a_burst_of_503s_on_subflow_creation_is_asked_again_at_once_and_every_task_passes(
        proxy: ApiProxy, agentenv_home: Path, tmp_path: Path) -> None:
    """As a SQLite-backed server answers a write that met another: 503, no Retry-After."""
    tasks = [{"id": f"t{i}", "steps": [{"id": "grade", "type": "test_score", "score": 1.0}]} for i in range(2)]
    bench = tmp_path / "bench.yaml"
    bench.write_text(yaml.safe_dump({"name": "Locked", "slug": "api-locked", "concurrency": 2, "tasks": tasks}))
    proxy.fail("POST", "/api/task_runs/", 4)  # the task runs that link each subflow to the benchmark
    env = {**os.environ, "PREFECT_API_URL": proxy.url, "PREFECT_AGENTENV_HOME": str(agentenv_home),
           "PREFECT_CLIENT_MAX_RETRIES": "0", "PREFECT_LOGGING_LEVEL": "WARNING"}
    done = subprocess.run([sys.executable, str(CLI), "bench", str(bench), "--report-dir", str(tmp_path / "out")],
                          env=env, text=True, capture_output=True, timeout=180)
    assert done.returncode == 0, done.stderr
    # With no retries of Prefect's own, every task passing means the quick retries took all four.
    assert len(proxy.failed) == 4
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["counts"]["total"] == 2 and "2/2 passed" in summary["headline"], summary["headline"]


def test_the_api_going_away_mid_run_ends_the_run_quickly_with_its_report_and_one_line(
        proxy: ApiProxy, api_url: str, agentenv_home: Path, tmp_path: Path) -> None:
    task = tmp_path / "t.json"
    task.write_text(json.dumps([{"id": "first", "type": "test_sleep", "seconds": 2},
                                {"id": "second", "type": "test_sleep", "seconds": 1, "depends_on": ["first"]}]))
    run = start_cli(["run", str(task)], home=agentenv_home, api_url=proxy.url, report=tmp_path / "r.json")
    owner = run.owner()
    proxy.cut()  # the first step is running
    cut_at = time.monotonic()
    code, out, err = run.finish(timeout=120)
    took = time.monotonic() - cut_at
    assert code == 0, err
    assert "Traceback" not in err and "Error logging to API" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    # One line says the API was lost; the only others are the run's own (a step that Prefect could
    # not start as a task run, when the cut came before it started), none of Prefect's.
    assert len([line for line in lines if "the Prefect API was lost" in line]) == 1, err
    assert all("the Prefect API was lost" in line or "prefect_agentenv." in line for line in lines), err
    # The steps take ~3 s; then one health check and a 2 s grace instead of a minute of retries.
    assert took < 30, took
    report = json.loads(run.report.read_text())
    assert report["status"] == "completed" and [s["state"] for s in report["steps"]] == ["completed"] * 2
    assert any("Prefect API was lost" in w for w in report["warnings"])
    assert (agentenv_home / "runs" / owner["run_id"] / "report.json").is_file()
    assert wait_until_gone(owner["run_id"]) == []
    assert flow_run_states(api_url, owner["flow_run_id"])[-1] == "RUNNING"  # the next run marks it Crashed
