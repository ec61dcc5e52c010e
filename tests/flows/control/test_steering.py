"""Steering a running benchmark from another process: ``prefect-agentenv control`` against a real Prefect server.

``bench`` runs in a process of its own, as an operator's would; the test is the operator's other
shell. It pauses the run by its slug, sees no task run start while paused, raises the
concurrency, resumes, and reads the run's record: the flow runs' own start and end times from the
Prefect API, the results, the control log and the summary.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.results.control_log import read_changes
from prefect_agentenv.results.store.run_store import read_results, run_folder

from .helpers import control, output_of, sleeper, wait_for_status, write_bench

pytestmark = [pytest.mark.usefixtures("prefect_harness", "agentenv_home"), pytest.mark.slow]


def flow_run_times(flow_run_ids: list[str]) -> list[tuple[datetime, datetime]]:
    """The start and end of each task run's flow run, as the Prefect server recorded them."""
    from uuid import UUID

    from prefect.client.orchestration import get_client

    async def read() -> list[tuple[datetime, datetime]]:
        async with get_client() as client:
            runs = [await client.read_flow_run(UUID(i)) for i in flow_run_ids]
        return [(r.start_time, r.end_time) for r in runs if r.start_time and r.end_time]

    return asyncio.run(read())


def most_at_once(spans: list[tuple[datetime, datetime]]) -> int:
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    top = now = 0
    for _, step in events:
        now += step
        top = max(top, now)
    return top


def test_a_benchmark_paused_from_another_shell_starts_nothing_then_runs_the_rest_four_at_a_time(
        tmp_path: Path, cli_env: dict[str, str], bench_process: Any) -> None:
    slug = "steered"
    path = write_bench(tmp_path, slug, [sleeper("nap", 3.0)], concurrency=1, epochs=12)
    bench = bench_process(path)
    wait_for_status(cli_env, slug, lambda s: s["counts"]["running"] >= 1)

    paused = control(cli_env, "pause", slug, "--reason", "provider throttling")
    assert paused.returncode == 0, paused.stdout + paused.stderr
    assert "paused=true" in paused.stdout
    idle = wait_for_status(cli_env, slug, lambda s: s["counts"]["running"] == 0)
    done_while_paused = idle["counts"]["done"]
    time.sleep(5)  # longer than a task run: one would have started by now
    still = wait_for_status(cli_env, slug, lambda s: True)
    assert still["counts"]["running"] == 0 and still["counts"]["done"] == done_while_paused
    assert still["applied"]["paused"] is True

    raised = control(cli_env, "set", slug, "concurrency=4", "--reason", "machine idle")
    assert raised.returncode == 0 and "concurrency=4" in raised.stdout, raised.stdout + raised.stderr
    resumed = control(cli_env, "resume", slug)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    bench.wait(timeout=300)
    output = output_of(bench)
    assert bench.returncode == 0, output
    assert "concurrency 4" in output and "pause paused: false → true" in output, output

    with get_artifact_store() as store:
        [run_id] = [k.split("/")[2] for k in store.list_objects(f"benchmarks/{slug}") if k.endswith("results.jsonl")]
        results = read_results(store, slug, run_id)
        changes = read_changes(store, run_folder(slug, run_id))
    assert len(results) == 12 and all(r.passed for r in results)
    kinds = [(c.kind, c.what, c.old, c.new) for c in changes if c.kind != "start"]
    assert kinds == [("pause", "paused", False, True), ("set", "concurrency", 1, 4), ("resume", "paused", True, False)]
    pause, _, resume = [c for c in changes if c.kind != "start"]
    assert pause.reason == "provider throttling" and "@" in pause.by

    spans = flow_run_times([r.flow_run_id for r in results if r.flow_run_id])
    paused_at, resumed_at = (datetime.fromisoformat(c.at.replace("Z", "+00:00")) for c in (pause, resume))
    assert not [s for s, _ in spans if paused_at.replace(microsecond=0) < s.replace(microsecond=0) < resumed_at], (
        "a task run started while the run was paused")
    before = [span for span in spans if span[0] < paused_at]
    after = [span for span in spans if span[0] >= resumed_at]
    assert most_at_once(before) == 1 and most_at_once(after) == 4, (before, after)

    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "## Changes during the run" in summary
    for change in (pause, resume):
        assert change.at in summary
    assert "| set | concurrency | 1 → 4 |" in summary and "provider throttling" in summary
    report = (tmp_path / "out" / "html" / "index.html").read_text()
    assert '<h2 id="changes">Changes during the run</h2>' in report and "<td>1 → 4</td>" in report


def test_a_requeued_errored_task_run_and_a_cancelled_one_are_recorded_as_such(
        tmp_path: Path, cli_env: dict[str, str], bench_process: Any) -> None:
    slug = "requeued"
    marker = tmp_path / "torn-down.txt"
    started = tmp_path / "slow-started.txt"
    tasks = [{"id": "broken", "steps": [{"id": "grade", "type": "test_score", "score": 1.0},
                                        {"id": "boom", "type": "test_fail", "message": "env bug",
                                         "depends_on": ["grade"]}]},
             {"id": "slow", "steps": [{"id": "proc", "type": "test_record", "marker_file": str(marker),
                                       "started_file": str(started)},
                                      {"id": "work", "type": "test_sleep", "seconds": 300, "depends_on": ["proc"]},
                                      {"id": "grade", "type": "test_score", "score": 1.0, "depends_on": ["work"]}]},
             sleeper("fine", 1.0)]
    path = tmp_path / f"{slug}.yaml"
    path.write_text(yaml.safe_dump({"name": slug, "slug": slug, "concurrency": 3, "tasks": tasks,
                                    "infrastructure": {"retries": 0}}))
    bench = bench_process(path)
    first = wait_for_status(cli_env, slug, lambda s: s["counts"]["errored"] >= 1 and started.exists())

    requeued = control(cli_env, "requeue", slug, "--errored", "--reason", "fix landed")
    assert requeued.returncode == 0, requeued.stdout + requeued.stderr
    assert "requeue: 1 task run(s) back in the queue: broken/0/0" in requeued.stdout
    assert control(cli_env, "cancel", slug, "nowhere").returncode == 1, "a task run that is not there is refused"
    cancelled = control(cli_env, "cancel", first["run_id"], "slow", "--reason", "stuck agent")
    assert cancelled.returncode == 0 and "cancel: stopped and torn down" in cancelled.stdout, cancelled.stdout

    bench.wait(timeout=300)
    output = output_of(bench)
    assert bench.returncode == 0, output
    assert marker.read_text().startswith("proc "), "the cancelled task run's process was torn down"
    assert " | ERROR " not in output and "NoneType: None" not in output and "Traceback" not in output, (
        "Prefect's own lines stay off the terminal: the board's error column has the failures")
    assert "env bug" in output and "cancelled by " in output
    with get_artifact_store() as store:
        results = read_results(store, slug, first["run_id"])
        changes = read_changes(store, run_folder(slug, first["run_id"]))
    broken = [r for r in results if r.task_id == "broken"]
    assert len(broken) == 2 and all(r.errored for r in broken), "the earlier attempt stays on record"
    assert len(broken[1].requeued) == 1 and broken[1].requeued[0].report_url == broken[0].report_url
    [slow] = [r for r in results if r.task_id == "slow"]
    assert slow.status == "cancelled" and slow.outcome.value == "UNSCORED" and slow.score is None
    assert slow.error and slow.error.startswith("cancelled by ") and slow.error.endswith(": stuck agent")
    assert slow.rerun_on_resume, "a resume runs a cancelled task run again"
    made = [(c.kind, c.what, c.reason) for c in changes if c.kind != "start"]
    assert ("requeue", "requeue errored", "fix landed") in made and ("cancel", "slow/0/0", "stuck agent") in made
    assert ("refused", "cancel nowhere", None) in made
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "| requeue | requeue errored |" in summary and "| cancel | slow/0/0 |" in summary


async def test_view_and_compare_find_a_run_in_the_store_its_worker_used_or_say_where_it_is(
        tmp_path: Path, cli_env: dict[str, str]) -> None:
    from prefect_agentenv.flows.benchmark import benchmark

    path = write_bench(tmp_path, "elsewhere", [sleeper("quick", 0.1)], concurrency=1)
    state = await benchmark(path=str(path), return_state=True)  # the worker: this test's agentenv home
    run_id = (await state.result(raise_on_failure=False))["run_id"]
    checkout = {**cli_env, "PREFECT_AGENTENV_HOME": str(tmp_path / "checkout-home")}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "prefect_agentenv.cli", *args], env=checkout, text=True,
                              capture_output=True, timeout=120, cwd=tmp_path)

    viewed = cli("view", "--benchmark", "elsewhere", "--run", run_id, "--out", str(tmp_path / "view"))
    assert viewed.returncode == 0 and (tmp_path / "view" / "index.html").exists(), viewed.stderr
    compared = cli("compare", f"elsewhere/{run_id}", run_id)
    assert compared.returncode == 0 and f"# elsewhere/{run_id} compared with" in compared.stdout, compared.stderr

    worker_store = Path(cli_env["PREFECT_AGENTENV_HOME"]) / "store"
    worker_store.rename(tmp_path / "moved")  # the worker's folder is not on this machine
    try:
        missing = cli("view", "--benchmark", "elsewhere", "--run", run_id)
    finally:
        (tmp_path / "moved").rename(worker_store)
    assert missing.returncode == 1
    assert f"stored it in the folder {worker_store}" in missing.stderr and "this command read" in missing.stderr
    assert str(tmp_path / "checkout-home") in missing.stderr


def test_control_refuses_bad_input_with_one_line_and_exit_2(cli_env: dict[str, str]) -> None:
    typo = control(cli_env, "set", "any-run", "concurency=4")
    assert typo.returncode == 2 and "unknown setting 'concurency' — did you mean 'concurrency'?" in typo.stderr
    nothing = control(cli_env, "requeue", "any-run")
    assert nothing.returncode == 2 and "give --errored or --infrastructure" in nothing.stderr
    missing = control(cli_env, "pause", "no-such-benchmark")
    assert missing.returncode == 2, missing.stdout + missing.stderr
    assert "no benchmark run in progress has the id or slug 'no-such-benchmark'" in missing.stderr
    assert "Traceback" not in typo.stderr + nothing.stderr + missing.stderr


def hold_only(run_id: str) -> None:
    """Set ``hold_model_calls`` in the run's control Variable and nothing else (as an edit in the UI
    would): task runs keep starting, and each new one's first model call is held."""
    from prefect.variables import Variable

    from prefect_agentenv.flows.control.state import control_variable

    name = control_variable(run_id)
    value = Variable.get(name)
    Variable.set(name, {**value, "hold_model_calls": True}, overwrite=True)


def test_a_hold_keeps_the_agent_at_its_next_model_call_and_resume_lets_it_go_on(
        tmp_path: Path, cli_env: dict[str, str], bench_process: Any) -> None:
    slug = "held"
    steps = [{"id": "assistant", "type": "deploy_agent", "a2a_agent_id": "llm", "agent_name": "assistant"},
             {"id": "ask", "type": "prompt_agent", "agent_name": "assistant", "prompt_id": "ask",
              "prompt": "Say hello.", "depends_on": ["assistant"]},
             {"id": "grade", "type": "test_score", "score": 1.0, "depends_on": ["ask"]}]
    path = write_bench(tmp_path, slug, [{"id": "hello", "steps": steps}], concurrency=1, epochs=30)
    bench = bench_process(path)
    first = wait_for_status(cli_env, slug, lambda s: s["counts"]["done"] >= 1)
    hold_only(first["run_id"])
    waiting = wait_for_status(cli_env, slug, lambda s: s["counts"]["held_calls"] == 1)
    time.sleep(3)
    still = wait_for_status(cli_env, slug, lambda s: True)
    assert still["counts"]["done"] == waiting["counts"]["done"] and still["counts"]["running"] == 1, (
        "the held task run waits at its model call")
    assert still["applied"]["hold_model_calls"] is True and still["applied"]["paused"] is False
    assert control(cli_env, "resume", slug).returncode == 0
    wait_for_status(cli_env, slug, lambda s: s["counts"]["done"] > waiting["counts"]["done"] + 1)
    bench.terminate()  # the rest would only repeat it: SIGTERM stops the benchmark as Ctrl-C does
    assert bench.wait(timeout=60) == 143
    said = output_of(bench)
    assert "terminated (SIGTERM): the running tasks were stopped; resume with --resume" in said, said[-2000:]
    assert "Traceback" not in said, said[-2000:]
