"""Reports byte for byte as recorded in ``tests/golden/`` (volatile fields normalised).

Two runs are guarded: the real CLI run shared with the transcript tests (reference email env,
scripted agent, mock judge, snapshots, a collected file, a secret) and a small benchmark run
twice (a passing, a partly passing and a failing task; the second run is compared with the
first), whose result, summary file and task reports are all compared.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from golden_reports import check, in_order
from real_run import RealRun

from prefect_agentenv.flows.benchmark import benchmark
from prefect_agentenv.flows.benchmark_result import BenchmarkRunResult


def _steady(report: dict[str, Any]) -> dict[str, Any]:
    """The report with the lists ordered by when concurrent steps finished put in a fixed order."""
    report = json.loads(json.dumps(report))
    in_order(report, "teardown", "label")
    in_order(report, "transcript.steps", "id")
    return report


def test_the_report_of_a_real_run_is_unchanged(real_run: RealRun) -> None:
    home = str(real_run.report_path.parent)
    check("real_run_report.json", _steady(real_run.report),
          {home: "<home>", real_run.report["flow_run_id"]: "<flow-run>"})


def _bench(tmp_path: Path, beta: float) -> Path:
    def task(task_id: str, *steps: dict[str, Any]) -> dict[str, Any]:
        return {"id": task_id, "tags": ["golden", task_id], "steps": [{"id": "work", "type": "test_noop"}, *steps]}

    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump({"name": "Golden bench", "slug": "golden-bench", "epochs": 1, "concurrency": 1,
                                    "tasks": [task("alpha", {"id": "grade", "type": "test_score", "score": 1.0}),
                                              task("beta", {"id": "grade", "type": "test_score", "score": beta}),
                                              task("gamma", {"id": "boom", "type": "test_fail"})]}))
    return path


async def _run(path: Path, report_dir: Path) -> dict[str, Any]:
    state = await benchmark(path=str(path), report_dir=str(report_dir), return_state=True)
    out = await state.aresult(raise_on_failure=False)
    assert isinstance(out, dict), out
    return out


@pytest.mark.usefixtures("prefect_harness", "agentenv_home")
async def test_a_benchmark_run_its_summary_and_its_task_reports_are_unchanged(tmp_path: Path) -> None:
    first = await _run(_bench(tmp_path, 1.0), tmp_path / "first")
    reports = tmp_path / "second"
    out = await _run(_bench(tmp_path, 0.5), reports)
    replace = {str(tmp_path): "<tmp>", first["run_id"]: "<previous-run>", out["run_id"]: "<run>"}
    check("benchmark_result.json", out, replace)
    assert BenchmarkRunResult.model_validate(out).model_dump(mode="json") == out  # as the CLI reads it back
    assert json.loads((reports / "summary.json").read_text()) == json.loads(json.dumps(out, default=str))
    for name in ("alpha", "beta", "gamma"):
        (report,) = reports.glob(f"{name}*.json")
        check(f"benchmark_task_{name}.json", _steady(json.loads(report.read_text())), replace)
