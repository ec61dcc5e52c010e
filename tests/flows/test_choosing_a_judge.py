"""Choosing a judge as docs/trusting-a-judge.md shows it: label a run once, calibrate the judge that
ran, rescore the run with another judge setup, and calibrate again on the same labels.

The records env, the scripted agent and the built-in mock model (labelled) run for real. The first
judge passes both criteria; the second, scripted through its grading policy, fails the second.
The labels pass the first criterion and fail the second, so the first judge agrees on 1 of 2
(its pass rate 1 makes chance agreement 1/2: κ 0) and the second on both (κ 1).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from flows.test_rescore import published as published  # the clinic data the records env loads
from flows.test_rescore import steps
from prefect_agentenv.cli import app
from prefect_agentenv.flows.benchmark import benchmark

pytestmark = pytest.mark.usefixtures("prefect_harness", "agentenv_home", "published")

CRITERIA = [{"id": "polite", "criterion": "The reply is polite."},
            {"id": "detailed", "criterion": "The reply explains the request in detail."}]


def write_bench(folder: Path, policy: str | None) -> Path:
    task_steps: list[dict[str, Any]] = steps(CRITERIA)
    if policy:
        task_steps[-1]["grading_policy_prompt"] = policy
    path = folder / "bench.yaml"
    path.write_text(yaml.safe_dump({"name": "Judge choice", "slug": "judge-choice", "concurrency": 1,
                                    "tasks": [{"id": "shared", "steps": task_steps}]}))
    return path


def calibrate(*args: str) -> list[dict[str, Any]]:
    done = CliRunner().invoke(app, ["calibrate", *args, "--json"])
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)


def test_the_same_labels_calibrate_the_judge_that_ran_and_the_one_a_rescore_used(tmp_path: Path) -> None:
    path = write_bench(tmp_path, None)
    state = asyncio.run(benchmark(path=str(path), return_state=True))
    assert state.is_completed(), state.message
    run = f"judge-choice/{state.state_details.flow_run_id}"
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({"task_id": "shared", "verifier_id": "tone", "criterion_id": cid,
                                          "label": verdict, "reviewer": "ana"}) + "\n"
                              for cid, verdict in (("polite", "pass"), ("detailed", "fail"))))
    [first] = calibrate(run, "--labels", str(labels))
    assert (first["labels"], first["panel"]["overall"]["kappa"]) == (2, 0.0)

    write_bench(tmp_path, "[mock-judge: fail c2]")
    done = CliRunner().invoke(app, ["rescore", run, "--benchmark", str(path)])
    assert done.exit_code == 0, done.output
    [second] = calibrate(run, "--record")
    assert second["fingerprint"] != first["fingerprint"]
    assert second["setup"]["criteria"] == first["setup"]["criteria"]  # the same criteria: the labels hold
    assert (second["labels"], second["panel"]["overall"]["kappa"]) == (2, 1.0)
