"""Trust where rubric scores are shown: real benchmark runs graded by a panel on the built-in mock
model (labelled, and named as such wherever its scores show), marked uncalibrated, refused by the
judge gate before any task run starts, calibrated against human labels, gated by κ, and stale once
the judge setup changes.

Judges a, b and c: a passes everything, b and c are scripted to fail the second criterion, so the
panel (majority) passes k1 and fails k2 in every task run. The labels pass k1 in all four runs and
k2 in one: TP 4, FN 1, TN 3, FP 0 over 8 labels, p_o = 7/8, p_e = 4/8·5/8 + 4/8·3/8 = 1/2,
κ = (7/8 − 1/2)/(1/2) = 3/4.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from flows.test_benchmark_comparison import PLAN, cli, run
from flows.test_benchmark_comparison import api_url as api_url  # a module-scoped fixture, used by name
from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.cli import app
from prefect_agentenv.flows.benchmark import benchmark
from prefect_agentenv.results.store.run_store import list_runs

pytestmark = pytest.mark.usefixtures("prefect_harness", "agentenv_home")

SLUG = "reply-judged"
SEEDS = 4
KAPPA = 0.75
runner = CliRunner()


def write_bench(folder: Path, *, c_instructions: str = "[mock-judge: fail c2]") -> Path:
    steps: list[dict[str, Any]] = [
        {"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": []},
        {"id": "assistant", "type": "deploy_agent", "a2a_agent_id": "scripted", "agent_name": "assistant",
         "env_ids": ["email"], "agent_config": {"plan": PLAN}, "depends_on": ["email"]},
        {"id": "reply", "type": "prompt_agent", "agent_name": "assistant", "prompt_id": "reply",
         "prompt": "Write to Dana about <topic>.", "depends_on": ["assistant"]},
        {"id": "grade", "type": "rubrics_verifier", "prompt_id": "reply", "verifier_id": "rubric",
         "depends_on": ["reply"], "judge_mode": "model",
         "criteria": [{"id": "k1", "criterion": "The reply says the email was sent."},
                      {"id": "k2", "criterion": "The reply names the topic."}],
         "judges": [{"id": "a"}, {"id": "b", "instructions": "[mock-judge: fail c2]"},
                    {"id": "c", "instructions": c_instructions}]},
    ]
    path = folder / "bench.yaml"
    path.write_text(yaml.safe_dump({
        "name": "Reply judged", "slug": SLUG, "concurrency": 2, "pool": True,
        "seeds": [{"topic": f"topic {i}"} for i in range(SEEDS)],
        "tasks": [{"id": "reply", "tags": ["mail"], "steps": steps}]}))
    return path


def labels(folder: Path) -> Path:
    rows = [{"task_id": f"reply[seed={s}]", "seed_index": s, "verifier_id": "rubric", "criterion_id": cid,
             "label": "pass" if cid == "k1" or s == 0 else "fail", "reviewer": "ana"}
            for s in range(SEEDS) for cid in ("k1", "k2")]
    path = folder / "labels.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


async def test_a_judge_gate_refuses_an_uncalibrated_setup_before_the_run_then_holds_it_to_the_calibrated_kappa(
        tmp_path: Path, api_url: str, agentenv_home: Path) -> None:  # noqa: F811
    bench = write_bench(tmp_path)
    state, first = await run(bench, report_dir=str(tmp_path / "first"))
    assert state.is_completed(), state.message
    trust = first["summary"]["judges"]
    assert (trust["rubric_scores"], trust["uncalibrated"], trust["calibrated"], trust["setups"]) == (4, 4, 0, 1)
    assert trust["mock"] == 4 and "**4 judged by the mock model: every criterion passes unless scripted**" in \
        first["markdown"]
    # Per task run: no split on k1, a against b and c on k2 (2 of 3 pairs): (0 + 2/3) / 2.
    assert trust["mean_disagreement"] == pytest.approx(1 / 3) and "panel disagreement 0.33" in first["markdown"]
    assert "## Judges" in first["markdown"] and "**4 uncalibrated**" in first["markdown"]
    index = (tmp_path / "first" / "html" / "index.html").read_text()
    assert '<div class="warn" id="judges">' in index and "rubric: uncalibrated" in index
    assert "4 judged by the mock model: every criterion passes unless scripted" in index
    assert "mock (judged by the mock model: every criterion passes unless scripted)" in first["markdown"]

    with get_artifact_store() as store:
        runs_before = len(list_runs(store, SLUG))
    refused = await benchmark(path=str(bench), require_calibrated_judge=0.5, return_state=True)
    assert refused.is_failed() and refused.message.startswith("judge gate failed: rubric of reply[seed=0] grades "
                                                              "under judge setup "), refused.message
    assert "(uncalibrated), short of κ 0.5" in refused.message and "no task run was started" in refused.message
    with get_artifact_store() as store:
        assert len(list_runs(store, SLUG)) == runs_before

    done = runner.invoke(app, ["calibrate", f"{SLUG}/{first['run_id']}", "--labels", str(labels(tmp_path))])
    assert done.exit_code == 0, done.output
    assert "| panel | 8 | 88% | 0.75 |" in done.output

    state, second = await run(bench, require_calibrated_judge=0.5)
    assert state.is_completed(), state.message
    assert "judge_gate" not in second and "**Judge gate passed:**" in second["markdown"]
    assert "judge gate: passed (lowest κ 0.75, rubric)" in second["markdown"]
    trust = second["summary"]["judges"]
    assert (trust["calibrated"], trust["lowest_kappa"], trust["required_kappa"]) == (4, pytest.approx(KAPPA), 0.5)
    assert "| reply[seed=3] | rubric | " in second["markdown"] and "calibrated κ 0.75 (8 labels)" in second["markdown"]

    compared = runner.invoke(app, ["compare", f"{SLUG}/{first['run_id']}", f"{SLUG}/{second['run_id']}"])
    assert compared.exit_code == 0, compared.output
    assert f"**Judges of {SLUG}/{second['run_id']}:** 4 of 4 rubric scores rest on judge setups calibrated to the " \
           "gate's κ 0.5; lowest κ 0.75; panel disagreement 0.33; **4 judged by the mock model: every criterion " \
           "passes unless scripted**." in compared.output

    strict = cli(["bench", str(bench), "--require-calibrated-judge", "0.8"], api_url, agentenv_home)
    assert strict.returncode == 6, strict.stdout + strict.stderr
    [line] = [ln for ln in (strict.stdout + strict.stderr).splitlines() if "judge gate" in ln]
    assert line.startswith("judge gate failed: rubric of reply[seed=0] grades under judge setup ")
    assert "(κ 0.75 below the gate's 0.8 (8 labels)), short of κ 0.8; no task run was started" in line

    changed = write_bench(tmp_path, c_instructions="[mock-judge: fail c1 c2]")
    state, third = await run(changed)
    assert state.is_completed(), state.message
    assert third["summary"]["judges"]["stale"] == 4 and "stale calibration" in third["markdown"]
