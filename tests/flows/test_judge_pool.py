"""Judges, round two, end to end on the worked path of docs/trusting-a-judge.md: labels pool across
the runs of a judge setup, only explicit writes record a calibration, and the judge gate refuses
before any task run starts.

Real benchmark runs of examples/judge-gate.yaml (email env, scripted agent, the warm pool) graded
by one judge on the built-in mock model (labelled: its trusted grading policy scripts it to fail
the second criterion, so it passes ``polite`` and fails ``explains`` in every task run). The
reviewer agrees with it everywhere: on two seeds and two epochs, 8 labels (4 pass, 4 fail), κ = 1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from flows.test_benchmark_comparison import api_url as api_url  # a module-scoped fixture, used by name
from flows.test_benchmark_comparison import cli, run
from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.cli import app
from prefect_agentenv.results.store.run_store import list_runs

pytestmark = pytest.mark.usefixtures("prefect_harness", "agentenv_home")

SLUG = "judge-gate"
SEEDS = 2
EPOCHS = 2
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "judge-gate.yaml"
runner = CliRunner()


def write_bench(folder: Path, *, polite: str | None = None) -> Path:
    """The worked path's benchmark (examples/judge-gate.yaml), its first criterion reworded when asked."""
    document = yaml.safe_load(EXAMPLE.read_text())
    if polite is not None:
        document["tasks"][0]["steps"][-1]["criteria"][0]["criterion"] = polite
    path = folder / "judge-gate.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def label_rows(seeds: range, epochs: range) -> list[dict[str, Any]]:
    """The reviewer's labels, as the scripted judge grades: polite passes, explains fails."""
    return [{"task_id": f"reply[seed={s}]", "seed_index": s, "epoch": e, "verifier_id": "tone", "criterion_id": cid,
             "label": "pass" if cid == "polite" else "fail", "reviewer": "ana"}
            for s in seeds for e in epochs for cid in ("polite", "explains")]


def write_labels(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def calibration_versions() -> list[str]:
    with get_artifact_store() as store:
        return [i for i in store.list_ids() if i.startswith("calibration.")]


async def test_labels_pool_across_runs_and_the_gate_refuses_a_new_setup_before_any_task_run(
        tmp_path: Path, api_url: str, agentenv_home: Path) -> None:  # noqa: F811
    bench = write_bench(tmp_path)
    state, first = await run(bench)
    assert state.is_completed(), state.message
    run_a = f"{SLUG}/{first['run_id']}"

    template = runner.invoke(app, ["calibrate", run_a, "--template"])
    assert template.exit_code == 0, template.output
    lines = [json.loads(line) for line in template.output.splitlines()]
    assert len(lines) == SEEDS * EPOCHS * 2 and {(r["verifier_id"], r["criterion_id"]) for r in lines} == {
        ("tone", "polite"), ("tone", "explains")}
    assert all(r["label"] == "" and "panel" not in r and "judge" not in r for r in lines)
    assert lines[0]["criterion"] == "The email to Dana is polite and signed."

    eight = write_labels(tmp_path / "eight.jsonl", label_rows(range(SEEDS), range(EPOCHS)))
    done = runner.invoke(app, ["calibrate", run_a, "--labels", str(eight)])
    assert done.exit_code == 0, done.output
    assert "| judge | 8 | 100% | 1.00 |" in done.output and "8 labels" in done.output
    [calibration] = calibration_versions()

    gated = cli(["bench", str(bench), "--require-calibrated-judge", "0.6"], api_url, agentenv_home)
    assert gated.returncode == 0, gated.stdout + gated.stderr
    assert (gated.stdout + gated.stderr).count("judge gate: passed (lowest κ 1.00, tone)") == 1
    assert "judged by the mock model: every criterion passes unless scripted; its scores say nothing" in gated.stdout

    for _ in range(2):  # the latest run (unlabelled): shown, never written
        shown = runner.invoke(app, ["calibrate", SLUG])
        assert shown.exit_code == 0, shown.output
        assert f"labels: 8 on run {run_a}" in shown.output and "not recorded" in shown.output
    with get_artifact_store() as store:
        assert len(store.list_versions(calibration)) == 1

    state, third = await run(bench)
    assert state.is_completed(), state.message
    run_c = f"{SLUG}/{third['run_id']}"
    one = write_labels(tmp_path / "one.jsonl", label_rows(range(1), range(1))[1:])  # explains, seed 0, epoch 0
    done = runner.invoke(app, ["calibrate", run_c, "--labels", str(one)])
    assert done.exit_code == 0, done.output
    assert f"labels: 8 on run {run_a}, 1 on run {run_c}" in done.output and "9 labels" in done.output
    with get_artifact_store() as store:
        versions = store.list_versions(calibration)
        assert len(versions) == 2
        latest = json.loads(store.read_file(versions[-1], "calibration.json"))
    assert latest["labels"] == 9 and latest["panel"]["overall"]["kappa"] == pytest.approx(1.0)
    assert [(s["run_id"], s["labels"]) for s in latest["sources"]] == [(first["run_id"], 8), (third["run_id"], 1)]
    listed = runner.invoke(app, ["artifact", "list", calibration])
    assert listed.exit_code == 0 and "κ 1.00 on 8 labels" in listed.output and "κ 1.00 on 9 labels" in listed.output

    state, gated = await run(bench, require_calibrated_judge=0.6)
    assert state.is_completed(), state.message
    assert gated["summary"]["judges"]["lowest_kappa"] == pytest.approx(1.0)
    assert "9 labels" in gated["markdown"]

    with get_artifact_store() as store:
        before = len(list_runs(store, SLUG))
    reworded = write_bench(tmp_path, polite="The email to Dana is courteous and signed.")
    refused = cli(["bench", str(reworded), "--require-calibrated-judge", "0.6"], api_url, agentenv_home)
    assert refused.returncode == 6, refused.stdout + refused.stderr
    [line] = [ln for ln in (refused.stdout + refused.stderr).splitlines() if "judge gate" in ln]
    assert line.startswith("judge gate failed: tone of reply[seed=0] grades under judge setup ")
    # The verifier was calibrated under the old wording: its new setup is stale, and it has no calibration.
    assert "(stale calibration), short of κ 0.6; no task run was started" in line
    assert f"prefect-agentenv calibrate {SLUG} --template > labels.jsonl" in line
    with get_artifact_store() as store:
        assert len(list_runs(store, SLUG)) == before
