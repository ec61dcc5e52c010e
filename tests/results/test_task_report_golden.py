"""A benchmark's result, summary file and task reports byte for byte as recorded in ``tests/golden/``.

A small benchmark runs twice (a passing, a partly passing and a failing task; the second run is
compared with the first); volatile fields are normalised first (``tests/golden_reports.py``). The
report of a real task run is guarded the same way in ``tests/transcript/test_transcript_run.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from golden_reports import check, steady
from prefect_agentenv.flows.benchmark import benchmark
from prefect_agentenv.results.store.benchmark_result import BenchmarkRunResult
from prefect_agentenv.results.store.fingerprint import package_version


def _bench(tmp_path: Path, beta: float) -> Path:
    def task(task_id: str, *steps: dict[str, Any]) -> dict[str, Any]:
        return {"id": task_id, "tags": ["golden", task_id], "steps": [{"id": "work", "type": "test_noop"}, *steps]}

    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump({"name": "Golden bench", "slug": "golden-bench", "epochs": 1, "concurrency": 1,
                                    "infrastructure": {"backoff_seconds": 0},  # gamma fails before any prompt
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
    # The package's version is in every result's setup: a release must not change the recorded files.
    replace = {str(tmp_path): "<tmp>", first["run_id"]: "<previous-run>", out["run_id"]: "<run>",
               package_version() or "<none>": "<package-version>",
               # The documents' digest follows every field a step model writes; the goldens are not about that.
               out["summary"]["setup"]["documents_sha256"][:12]: "<digest>"}
    check("benchmark_result.json", out, replace)
    assert BenchmarkRunResult.model_validate(out).model_dump(mode="json") == out  # as the CLI reads it back
    assert json.loads((reports / "summary.json").read_text()) == json.loads(json.dumps(out, default=str))
    for name in ("alpha", "beta", "gamma"):
        (report,) = reports.glob(f"{name}*.json")
        check(f"benchmark_task_{name}.json", steady(json.loads(report.read_text())), replace)
