"""A benchmark with known results, run three times through the benchmark flow, its report published."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.flows.benchmark import benchmark
from prefect_agentenv.grading.outcome import Outcome
from prefect_agentenv.results import TaskResult, summarize
from prefect_agentenv.results.store.run_store import ResultsStore
from prefect_agentenv.settings import get_settings

SLUG = "view-bench"


def write_bench(folder: Path, beta: float) -> Path:
    """alpha passes, gamma scores 0.5, beta scores ``beta``: every number of the report is known."""
    def task(task_id: str, score: float, tags: list[str]) -> dict[str, Any]:
        return {"id": task_id, "tags": tags, "steps": [{"id": "work", "type": "test_noop", "depends_on": []},
                                                       {"id": "grade", "type": "test_score", "score": score}]}

    path = folder / "bench.yaml"
    path.write_text(yaml.safe_dump({"name": "View bench", "slug": SLUG, "concurrency": 3, "tasks": [
        task("alpha", 1.0, ["fast", "mail"]), task("beta", beta, ["fast"]), task("gamma", 0.5, ["slow"])]}))
    return path


def record_earlier_run(run_id: str, day: int) -> None:
    """An earlier finished run in the runs index, where beta still passed (mean 0.833, pass rate 2/3)."""
    scores = {"alpha": (1.0, ["fast", "mail"]), "beta": (1.0, ["fast"]), "gamma": (0.5, ["slow"])}
    results = [TaskResult(task_id=t, tags=tags, status="completed", score=score, axis_scores={"correctness": score},
                          outcome=Outcome.PASSED if score == 1.0 else Outcome.BELOW_ONE)
               for t, (score, tags) in scores.items()]
    with get_artifact_store() as store:
        run = ResultsStore(store, SLUG, run_id)
        run.record_started(started_at=f"2026-01-{day:02d}T02:00:00+00:00")
        for result in results:
            run.append(result)
        run.record_finished(summarize(results), finished_at=f"2026-01-{day:02d}T02:05:00+00:00")


@pytest.fixture(scope="session")
async def bench_runs(prefect_harness: None, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Two earlier runs in the index, then a real run of the benchmark flow where beta drops to 0."""
    folder = tmp_path_factory.mktemp("view-bench")
    mp = pytest.MonkeyPatch()
    mp.setenv("PREFECT_AGENTENV_HOME", str(folder / "home"))
    get_settings.cache_clear()
    try:
        record_earlier_run("nightly-1", 1)
        record_earlier_run("nightly-2", 2)
        state = await benchmark(path=str(write_bench(folder, 0.0)), return_state=True)
        out = await state.result(raise_on_failure=False)
    finally:  # the rest of the session must not write into this benchmark's home
        mp.undo()
        get_settings.cache_clear()
    yield {"out": out, "home": folder / "home", "index": Path(out["report_url"].removeprefix("file://"))}
