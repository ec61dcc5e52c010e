"""Live settings of a running benchmark, changed from another process: the model-call limits and the
time limit of the task runs started after the change, a budget set on a run started without one, and
a requeue by task id. ``bench`` runs in a process of its own against a real Prefect server, with
the llm agent on the built-in mock model (the only mock) where model calls matter.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.results.control_log import read_changes
from prefect_agentenv.results.store.run_store import read_results, run_folder

from .helpers import control, output_of, sleeper, wait_for, write_bench

pytestmark = [pytest.mark.usefixtures("prefect_harness", "agentenv_home"), pytest.mark.slow]


def talk(task_id: str, prompts: int = 2) -> dict[str, Any]:
    """A task whose llm agent answers ``prompts`` prompts in turn: one model call each."""
    steps: list[dict[str, Any]] = [{"id": "assistant", "type": "deploy_agent", "a2a_agent_id": "llm",
                                    "agent_name": "assistant"}]
    for n in range(prompts):
        steps.append({"id": f"ask{n}", "type": "prompt_agent", "agent_name": "assistant", "prompt_id": f"ask{n}",
                      "prompt": f"Say hello, number {n}.", "depends_on": [steps[-1]["id"]]})
    steps.append({"id": "grade", "type": "test_score", "score": 1.0, "depends_on": [steps[-1]["id"]]})
    return {"id": task_id, "steps": steps}


def report_of(out: Path, task_id: str) -> dict[str, Any]:
    [path] = out.glob(f"{task_id}*-epoch0.json")
    return dict(json.loads(path.read_text()))


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def paused_then(env: dict[str, str], slug: str, ready: Any) -> dict[str, Any]:
    """Pause the run once ``ready(status)``, and wait until nothing runs."""
    wait_for(slug, ready)
    paused = control(env, "pause", slug)
    assert paused.returncode == 0, paused.stdout + paused.stderr
    return wait_for(slug, lambda s: s["counts"]["running"] == 0)


def test_limits_and_the_time_limit_set_live_apply_to_the_task_runs_started_after_the_change(
        tmp_path: Path, cli_env: dict[str, str], bench_process: Any) -> None:
    slug = "limited-live"
    tasks = [talk("before"), sleeper("warm", 20.0), talk("after"), sleeper("nap", 60.0)]
    bench = bench_process(write_bench(tmp_path, slug, tasks, concurrency=1))
    idle = paused_then(cli_env, slug, lambda s: s["counts"]["done"] >= 1)
    assert idle["counts"]["done"] == 2, "before and warm ran; the pause came while warm ran"

    changed = control(cli_env, "set", slug, "limit_model_calls=1", "timeout_seconds=15", "--reason", "cap it")
    assert changed.returncode == 0, changed.stdout + changed.stderr
    assert "limit_model_calls=1" in changed.stdout and "timeout_seconds=15" in changed.stdout
    assert control(cli_env, "resume", slug).returncode == 0
    bench.wait(timeout=300)
    output = output_of(bench)
    assert bench.returncode == 0, output  # a timed-out task run is a score, not a failed benchmark

    out = tmp_path / "out"
    before, after = report_of(out, "before"), report_of(out, "after")
    assert not any(p["is_truncated"] for p in before["context"]["prompt_responses"].values())
    assert before["model_calls"]["by_role"]["agent"]["refused"] == 0, "started before the change: no limit"
    agent = after["model_calls"]["by_role"]["agent"]
    assert (agent["calls"], agent["refused"], agent["limit_reached"]) == (2, 1, "model_calls")
    assert after["context"]["prompt_responses"]["ask1"]["is_truncated"], "the second call was refused"
    with get_artifact_store() as store:
        [run_id] = [k.split("/")[2] for k in store.list_objects(f"benchmarks/{slug}") if k.endswith("results.jsonl")]
        results = {r.task_id: r for r in read_results(store, slug, run_id)}
        changes = read_changes(store, run_folder(slug, run_id))
    nap = results["nap"]
    assert nap.outcome.value == "TIMED_OUT" and nap.error == "the task did not finish within 15s", nap.error
    assert 14 <= nap.duration_s < 40, "the operator's limit, not the task's own 1800 s"
    assert results["warm"].passed and results["before"].passed
    made = {(c.what, c.old, c.new, c.reason) for c in changes if c.kind == "set"}
    assert made == {("limit_model_calls", None, 1, "cap it"), ("timeout_seconds", None, 15.0, "cap it")}


def test_a_budget_set_on_a_run_started_without_one_counts_what_it_spent_and_stops_new_task_runs(
        tmp_path: Path, cli_env: dict[str, str], bench_process: Any) -> None:
    slug = "budget-live"
    bench = bench_process(write_bench(tmp_path, slug, [talk("hello", prompts=1)], concurrency=1, epochs=12))
    idle = paused_then(cli_env, slug, lambda s: s["counts"]["done"] >= 2)
    with get_artifact_store() as store:
        so_far = read_results(store, slug, idle["run_id"])
    spent = [(r.usage.input_tokens or 0) + (r.usage.output_tokens or 0) for r in so_far if r.usage]
    assert len(spent) == len(so_far) == idle["counts"]["done"] and min(spent) > 0
    # Room for one more task run and part of another: a budget that counted from now would allow many more.
    budget = sum(spent) + max(spent) + max(spent) // 2
    changed = control(cli_env, "set", slug, f"budget_tokens={budget}", "--reason", "spend cap")
    assert changed.returncode == 0 and f"budget_tokens={budget}" in changed.stdout, changed.stdout + changed.stderr
    assert control(cli_env, "resume", slug).returncode == 0
    bench.wait(timeout=300)
    output = output_of(bench)
    assert bench.returncode == 7, output  # a spent budget: as with one given at the start
    assert "budget spent" in output

    with get_artifact_store() as store:
        results = read_results(store, slug, idle["run_id"])
        changes = read_changes(store, run_folder(slug, idle["run_id"]))
    ran = [r for r in results if r.status != "not_run"]
    not_run = [r for r in results if r.status == "not_run"]
    assert len(results) == 12 and len(ran) in (len(so_far) + 1, len(so_far) + 2), [r.status for r in results]
    assert not_run and all(r.not_run == "budget" and r.error and "budget of" in r.error for r in not_run)
    assert sum((r.usage.input_tokens or 0) + (r.usage.output_tokens or 0) for r in ran if r.usage) >= budget
    [change] = [c for c in changes if c.what == "budget_tokens"]
    assert (change.old, change.new, change.reason) == (None, budget, "spend cap")
    assert change.detail and change.detail.startswith("the run had no budget: spent so far ")
    assert f"{sum(spent):,} tokens" in change.detail and f"its {len(so_far)} recorded results" in change.detail


def test_a_task_run_requeued_by_its_task_id_runs_again_and_one_queued_or_running_is_refused(
        tmp_path: Path, cli_env: dict[str, str], bench_process: Any) -> None:
    slug = "requeued-by-id"
    broken = {"id": "broken", "steps": [{"id": "boom", "type": "test_fail", "message": "env bug"}]}
    bench = bench_process(write_bench(tmp_path, slug, [broken, sleeper("slow", 40.0)], concurrency=2,
                                      infrastructure={"retries": 0}))
    first = wait_for(slug, lambda s: s["counts"]["done"] >= 1 and s["counts"]["running"] == 1)

    busy = control(cli_env, "requeue", slug, "slow")
    assert busy.returncode == 1 and "refused: no finished task run matches slow" in busy.stdout, busy.stdout
    requeued = control(cli_env, "requeue", slug, "broken", "--reason", "fix landed")
    assert requeued.returncode == 0, requeued.stdout + requeued.stderr
    assert "requeue: 1 task run(s) back in the queue: broken/0/0" in requeued.stdout
    bench.wait(timeout=300)
    assert bench.returncode == 0, output_of(bench)  # broken fails again: a score, not a failed benchmark

    with get_artifact_store() as store:
        results = read_results(store, slug, first["run_id"])
        changes = read_changes(store, run_folder(slug, first["run_id"]))
    broken_runs = [r for r in results if r.task_id == "broken"]
    assert len(broken_runs) == 2 and all(r.errored for r in broken_runs), "the earlier attempt stays on record"
    assert [a.report_url for a in broken_runs[1].requeued] == [broken_runs[0].report_url]
    assert at(broken_runs[1].started_at or "") >= at(broken_runs[0].started_at or "")
    made = [(c.kind, c.what, c.reason) for c in changes if c.kind != "start"]
    assert made == [("refused", "requeue slow", None), ("requeue", "requeue broken", "fix landed")]
    assert [r.task_id for r in results].count("slow") == 1
