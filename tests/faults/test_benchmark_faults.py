"""A benchmark never aborts on a failed Prefect API call: the task run is recorded errored, as an
infrastructure failure, and the rest go on (here every dispatch is refused by a real API: the
deployment does not exist, so no retry is attempted)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.flows.benchmark import benchmark
from prefect_agentenv.results.store.run_store import read_results

pytestmark = pytest.mark.usefixtures("prefect_harness", "agentenv_home")


@pytest.mark.parametrize("sharded", [False, True], ids=["one-per-flow-run", "in-shards"])
async def test_a_refused_dispatch_is_recorded_errored_and_the_benchmark_finishes(tmp_path: Path, sharded: bool) -> None:
    """Sent in shards, every task run of the refused shard says why, none waits forever."""
    tasks = [{"id": name, "steps": [{"id": "grade", "type": "test_score", "score": 1.0}]} for name in ("a", "b")]
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump({"name": "Faults", "slug": "fault-bench", "concurrency": 2, "tasks": tasks}))
    missing = {"shard_deployment": "agent-task-shard/does-not-exist", "tasks_per_flow_run": 2} if sharded else {
        "deployment": "agent-task/does-not-exist"}
    state = await benchmark(path=str(path), dispatch="deployment", **missing, return_state=True)
    out = await state.result(raise_on_failure=False)
    assert isinstance(out, dict), out
    assert out["counts"]["total"] == 2
    with get_artifact_store() as store:
        results = read_results(store, "fault-bench", out["run_id"])
    assert sorted(r.task_id for r in results) == ["a", "b"]
    assert all(r.status == "crashed" and r.outcome.value == "FAILED" and r.score == 0.0 for r in results)
    assert all("could not run" in (r.error or "") for r in results)
    # The API refused (no such deployment): an infrastructure failure that a retry would repeat.
    assert all(r.failure and (r.failure.kind, r.failure.reason, r.failure.retryable) ==
               ("infrastructure", "prefect_api", False) for r in results)
    assert all(r.attempts == 1 and r.failure and r.failure.error_type == "ObjectNotFound" for r in results)
