"""A run-wide budget stops a benchmark part-way: its gateways refuse the next call once it is spent,
no new task run starts, and the rest are recorded as not run (in no mean), which a resume runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.flows.benchmark import benchmark
from prefect_agentenv.results.store.run_store import read_results
from servers import mock_model

pytestmark = pytest.mark.usefixtures("prefect_harness", "agentenv_home")

SLUG = "budget-bench"


def write_bench(tmp_path: Path, *, epochs: int = 20, budget: dict[str, Any] | None = None) -> Path:
    """One task that prompts the llm agent (the mock model answers), run ``epochs`` times, one at a time."""
    steps = [{"id": "assistant", "type": "deploy_agent", "a2a_agent_id": "llm", "agent_name": "assistant"},
             {"id": "ask", "type": "prompt_agent", "agent_name": "assistant", "prompt_id": "ask",
              "prompt": "Say hello.", "depends_on": ["assistant"]},
             {"id": "grade", "type": "test_score", "score": 1.0, "depends_on": ["ask"]}]
    document = {"name": "Budget bench", "slug": SLUG, "epochs": epochs, "concurrency": 1,
                "tasks": [{"id": "hello", "steps": steps}]}
    if budget:
        document["budget"] = budget
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


async def test_a_token_budget_stops_a_benchmark_of_20_task_runs_part_way_and_the_rest_are_not_run(
        tmp_path: Path) -> None:
    # One task run's prompt and answer cost the mock model's tokens a few times over this budget's share.
    state = await benchmark(path=str(write_bench(tmp_path, budget={"tokens": 60})), return_state=True)
    out = await state.result(raise_on_failure=False)
    # Not a green Completed in the UI: the command line exits 7 for this run.
    assert state.is_failed() and state.name == "Budget spent", state
    assert state.message.startswith("budget spent: ") and "resume with --resume" in state.message
    with get_artifact_store() as store:
        results = read_results(store, SLUG, out["run_id"])
    ran = [r for r in results if r.status != "not_run"]
    not_run = [r for r in results if r.status == "not_run"]
    assert len(results) == 20 and 1 <= len(ran) < 20 and len(not_run) == 20 - len(ran)
    assert all(r.not_run == "budget" and r.outcome.value == "UNSCORED" and r.score is None for r in not_run)
    assert all(r.rerun_on_resume for r in not_run) and not any(r.rerun_on_resume for r in ran if r.passed)
    assert sum((r.usage.input_tokens or 0) + (r.usage.output_tokens or 0) for r in ran if r.usage) >= 60
    counts = out["summary"]["counts"]
    assert counts["not_run"] == len(not_run) and counts["unscored"] >= len(not_run)
    assert f"{len(not_run)} not run: budget spent" in out["headline"]
    assert out["summary"]["pass_rate"] == 1.0, "the task runs not run are in no mean"
    assert "**Budget spent:**" in out["markdown"], "the summary says why the run failed"


def test_bench_exits_7_with_one_line_when_its_budget_is_spent(tmp_path: Path, agentenv_home: Path) -> None:
    from prefect.settings import get_current_settings

    env = {**os.environ, "PREFECT_API_URL": get_current_settings().api.url or "",
           "PREFECT_AGENTENV_HOME": str(agentenv_home), "PREFECT_LOGGING_LEVEL": "WARNING"}
    done = subprocess.run([sys.executable, "-m", "prefect_agentenv.cli", "bench", str(write_bench(tmp_path, epochs=4)),
                           "--budget-tokens", "1"], env=env, text=True, capture_output=True, timeout=600)
    assert done.returncode == 7, done.stdout + done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("budget spent:")]
    assert "task run(s) not run; resume with --resume" in line and "Traceback" not in done.stderr


async def test_a_recorded_benchmark_replays_to_the_same_scores_with_no_provider_to_ask(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect_agentenv.settings import get_settings

    # Scored by the judge model on the agent's reply: the replayed replies must be the recorded ones.
    bench = tmp_path / "judged.yaml"

    def steps(name: str) -> list[dict[str, Any]]:
        return [{"id": "assistant", "type": "deploy_agent", "a2a_agent_id": "llm", "agent_name": "assistant"},
                {"id": "ask", "type": "prompt_agent", "agent_name": "assistant", "prompt_id": "ask",
                 "prompt": f"Say hello to {name}.", "depends_on": ["assistant"]},
                {"id": "tone", "type": "rubrics_verifier", "prompt_id": "ask", "verifier_id": "tone",
                 "judge_mode": "model", "criteria": [{"id": "polite", "criterion": "The reply is polite."}],
                 "depends_on": ["ask"]}]

    bench.write_text(yaml.safe_dump({"name": "Judged", "slug": "judged-bench", "concurrency": 2,
                                     "tasks": [{"id": name.lower(), "steps": steps(name)} for name in ("Dana", "Sam")]}))
    # The provider is a mock model of its own at OPENAI_BASE_URL: stopped before the replay.
    with mock_model(tmp_path / "provider.log") as provider:
        monkeypatch.setenv("OPENAI_BASE_URL", provider.url("/v1"))
        get_settings.cache_clear()
        state = await benchmark(path=str(bench), record_model_calls=True, return_state=True)
        recorded = await state.result(raise_on_failure=False)
    assert state.is_completed(), state.message
    with get_artifact_store() as store:
        kept = store.get_object(f"benchmarks/judged-bench/{recorded['run_id']}/model-calls.jsonl").decode()
        first = {r.run_key: r.score for r in read_results(store, "judged-bench", recorded["run_id"])}
    assert kept.count("\n") >= 4, "two prompts and two judgements, at least"
    assert set(first.values()) == {1.0}, first

    try:  # nothing listens at OPENAI_BASE_URL now
        state = await benchmark(path=str(bench), replay=recorded["run_id"], return_state=True)
        replayed = await state.result(raise_on_failure=False)
    finally:
        get_settings.cache_clear()
    assert state.is_completed(), state.message
    with get_artifact_store() as store:
        again = {r.run_key: r.score for r in read_results(store, "judged-bench", replayed["run_id"])}
    assert again == first and replayed["summary"]["mean_score"] == recorded["summary"]["mean_score"]


async def test_replaying_a_run_that_kept_no_model_calls_is_refused_before_anything_runs(tmp_path: Path) -> None:
    state = await benchmark(path=str(write_bench(tmp_path, epochs=1)), replay="no-such-run", return_state=True)
    assert state.is_failed() and "kept no model calls; run it with --record-model-calls" in (state.message or "")
