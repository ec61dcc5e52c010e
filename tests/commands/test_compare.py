"""``prefect-agentenv compare RUN_A RUN_B``: runs read from the artifact store, compared pair by pair."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.cli import app
from prefect_agentenv.grading.outcome import Outcome
from prefect_agentenv.results import AgentSetup, SetupFingerprint, TaskResult, summarize
from prefect_agentenv.results.store.run_store import ResultsStore

pytestmark = pytest.mark.usefixtures("agentenv_home")

runner = CliRunner()


def record(slug: str, run_id: str, day: int, passed: int, *, agent: str | None = "scripted", tasks: int = 8) -> None:
    """A finished run of ``tasks`` seeded task runs, the first ``passed`` of them passing."""
    setup = None if agent is None else SetupFingerprint(
        benchmark=slug, benchmark_version="1", package_version="0.1.0",
        agents=[AgentSetup(name="assistant", agent_id=agent, version="1.0.0")], overrides={"a2a_agent_id": agent})
    results = [TaskResult(task_id="reply", seed_index=i, status="completed", tags=["mail"], setup=setup,
                          outcome=Outcome.PASSED if i < passed else Outcome.BELOW_ONE, score=1.0 if i < passed else 0.0)
               for i in range(tasks)]
    with get_artifact_store() as store:
        run = ResultsStore(store, slug, run_id)
        run.record_started(started_at=f"2025-01-{day:02d}T02:00:00+00:00")
        for result in results:
            run.append(result)
        run.record_finished(summarize(results), finished_at=f"2025-01-{day:02d}T02:05:00+00:00")


def test_compare_prints_the_paired_comparison_and_names_the_setup_difference() -> None:
    record("mail", "base", 1, passed=8)
    record("mail", "other", 2, passed=0, agent="llm")

    done = runner.invoke(app, ["compare", "mail/base", "mail"])

    assert done.exit_code == 0, done.output
    assert done.output.startswith("# mail/other compared with mail/base")
    assert "**Setup differs:** agent assistant: scripted 1.0.0 → llm 1.0.0; overrides.a2a_agent_id: scripted → llm" \
        in done.output
    assert "| pass rate | 8 | 100% | 0% |" in done.output and "McNemar exact p=0.0078 (8 lost, 0 gained)" in done.output


def test_compare_fails_on_regression_with_exit_4_and_passes_a_tied_pair() -> None:
    record("mail", "base", 1, passed=8)
    record("mail", "again", 2, passed=8)
    record("mail", "other", 3, passed=0, agent="llm")

    worse = runner.invoke(app, ["compare", "base", "other", "--fail-on-regression"])
    assert worse.exit_code == 4, worse.output
    assert "gate failed: worse than mail/base: all task runs worse" in worse.output
    tied = runner.invoke(app, ["compare", "base", "again", "--fail-on-regression", "--json"])
    assert tied.exit_code == 0, tied.output
    data = json.loads(tied.output)
    assert data["overall"]["verdict"] == "tied" and data["setup"]["differences"] == []


def test_runs_of_different_benchmarks_are_compared_on_the_task_runs_they_share() -> None:
    record("mail", "base", 1, passed=8, tasks=8)
    record("mail-v2", "next", 2, passed=10, tasks=10, agent=None)  # an older store: no setup recorded

    done = runner.invoke(app, ["compare", "mail", "mail-v2", "--json"])

    data = json.loads(done.output)
    assert (data["pairs"], data["only_current"], data["only_previous"]) == (8, 2, 0)
    assert (data["tasks_shared"], data["tasks_current"], data["tasks_previous"]) == (8, 10, 8)
    assert data["setup"] == {"known": False, "unknown_runs": ["current"], "differences": []}


def test_an_unknown_run_is_refused_with_exit_2_and_one_line() -> None:
    record("mail", "base", 1, passed=8)
    done = runner.invoke(app, ["compare", "base", "nope"])
    assert done.exit_code == 2
    assert done.output.strip().startswith("error: no benchmark run 'nope'") and "Traceback" not in done.output
