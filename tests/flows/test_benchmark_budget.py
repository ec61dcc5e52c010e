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
from prefect_agentenv.results.store import read_results

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
    assert state.is_completed(), state.message
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


def test_bench_exits_6_with_one_line_when_its_budget_is_spent(tmp_path: Path, agentenv_home: Path) -> None:
    from prefect.settings import get_current_settings

    env = {**os.environ, "PREFECT_API_URL": get_current_settings().api.url or "",
           "PREFECT_AGENTENV_HOME": str(agentenv_home), "PREFECT_LOGGING_LEVEL": "WARNING"}
    done = subprocess.run([sys.executable, "-m", "prefect_agentenv.cli", "bench", str(write_bench(tmp_path, epochs=4)),
                           "--budget-tokens", "1"], env=env, text=True, capture_output=True, timeout=600)
    assert done.returncode == 6, done.stdout + done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("budget spent:")]
    assert "task run(s) not run; resume with --resume" in line and "Traceback" not in done.stderr
