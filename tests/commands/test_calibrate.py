"""``prefect-agentenv calibrate RUN --labels FILE``: judges with known error rates against known labels.

The judges are the built-in mock model (labelled: it passes every criterion unless a judge's
instructions script it to fail chosen ones), graded for real by the rubrics_verifier over a real
email env and scripted agent; the task runs' reports are stored and recorded as a benchmark run.
The expected figures are computed in this file from the verdicts and labels, by hand arithmetic.
"""

from __future__ import annotations

import asyncio
import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.cli import app
from prefect_agentenv.results import summarize
from prefect_agentenv.results.judges.calibration import load_calibration
from prefect_agentenv.results.judges.labels import labels_artifact_id
from prefect_agentenv.results.result_row import result_from_report
from prefect_agentenv.results.rows import RunKey
from prefect_agentenv.results.store.run_store import ResultsStore
from steps.helpers import publish_examples, run_doc
from steps.test_rubrics_verifier import dana

pytestmark = pytest.mark.usefixtures("agentenv_home")

runner = CliRunner()

CRITERIA = [{"id": f"k{n}", "criterion": f"Criterion number {n} holds."} for n in range(1, 5)]
JUDGES = [{"id": "a"},                                              # passes everything
          {"id": "b", "instructions": "[mock-judge: fail c2]"},      # fails k2
          {"id": "c", "instructions": "[mock-judge: fail c2 c3]"}]   # fails k2 and k3
VERDICTS = {"a": [True, True, True, True], "b": [True, False, True, True], "c": [True, False, False, True]}
VERDICTS["panel"] = [sum(v[i] for v in VERDICTS.values()) >= 2 for i in range(4)]  # majority of a, b, c
LABELS = {"k1": [True, True, False], "k2": [False, False, True], "k3": [False, False, False], "k4": [True, True, True]}
"""The human reference: per criterion, epochs 0, 1, 2."""
EPOCHS = 3


def expected(judge: str) -> dict[str, Fraction]:
    """Agreement, κ, TPR and TNR by hand: p_o, p_e from the marginals, κ = (p_o − p_e)/(1 − p_e)."""
    pairs = [(VERDICTS[judge][k], LABELS[f"k{k + 1}"][e]) for k in range(4) for e in range(EPOCHS)]
    tp = sum(1 for j, h in pairs if j and h)
    tn = sum(1 for j, h in pairs if not j and not h)
    fp = sum(1 for j, h in pairs if j and not h)
    fn = sum(1 for j, h in pairs if not j and h)
    n = len(pairs)
    observed = Fraction(tp + tn, n)
    chance = Fraction(tp + fp, n) * Fraction(tp + fn, n) + Fraction(tn + fn, n) * Fraction(tn + fp, n)
    return {"agreement": observed, "kappa": (observed - chance) / (1 - chance),
            "tpr": Fraction(tp, tp + fn), "tnr": Fraction(tn, tn + fp)}


@pytest.fixture
def judged_run() -> str:
    """A benchmark run of three epochs of one task graded by the panel a, b, c, in the store."""
    publish_examples()
    panel = {"id": "grade", "type": "rubrics_verifier", "prompt_id": "reply", "verifier_id": "rubric",
             "criteria": CRITERIA, "depends_on": ["reply"], "judges": JUDGES, "judge_mode": "model"}
    with get_artifact_store() as store:
        run = ResultsStore(store, "mail", "r1")
        run.record_started(started_at="2025-01-01T02:00:00+00:00")
        results = []
        for epoch in range(EPOCHS):
            report = asyncio.run(run_doc([*dana(), panel], task_id="reply"))
            assert report.status == "completed", report.error
            key = f"reports/reply-{epoch}.json"
            store.put_object(key, report.model_dump_json())
            result = result_from_report(report, RunKey("reply", 0, epoch), report_url=store.object_url(key))
            run.append(result)
            results.append(result)
        run.record_finished(summarize(results), finished_at="2025-01-01T02:05:00+00:00")
    return "mail/r1"


def write_labels(path: Path, reviewer: str, labels: dict[str, list[bool]], epochs: range) -> Path:
    rows: list[dict[str, Any]] = [
        {"task_id": "reply", "epoch": e, "verifier_id": "rubric", "criterion_id": cid,
         "label": "pass" if verdicts[e] else "fail", "note": f"{reviewer} read the reply", "reviewer": reviewer}
        for cid, verdicts in labels.items() for e in epochs]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_calibrate_gives_each_scripted_judge_and_the_panel_the_kappa_and_rates_computed_by_hand(
        judged_run: str, tmp_path: Path) -> None:
    done = runner.invoke(app, ["calibrate", judged_run, "--labels",
                               str(write_labels(tmp_path / "labels.jsonl", "ana", LABELS, range(EPOCHS))), "--json"])
    assert done.exit_code == 0, done.output
    [record] = json.loads(done.output)
    assert record["labels"] == 12 and record["setup"]["panel_rule"] == "majority"
    figures = {j["judge"]: j["overall"] for j in [*record["judges"], record["panel"]]}
    for judge in ("a", "b", "c", "panel"):
        want = expected(judge)
        got = figures[judge]
        assert got["n"] == 12 and got["unscored"] == 0
        assert got["agreement"] == pytest.approx(float(want["agreement"]))
        assert got["kappa"] == pytest.approx(float(want["kappa"]))
        assert got["tpr"] == pytest.approx(float(want["tpr"])) and got["tnr"] == pytest.approx(float(want["tnr"]))
    # The same figures, written out: a always passes (κ 0), c errs on 2 of 12 (κ 2/3), b and the panel
    # agree on 7 of 12 (κ 1/6).
    assert (figures["a"]["kappa"], figures["a"]["tpr"], figures["a"]["tnr"]) == (0.0, 1.0, 0.0)
    assert figures["c"]["kappa"] == pytest.approx(2 / 3) and figures["b"]["kappa"] == pytest.approx(1 / 6)
    assert figures["panel"]["tpr_n"] == 6 and figures["panel"]["tnr_n"] == 6
    interval = figures["c"]["tnr_interval"]
    assert interval["method"] == "wilson" and interval["low"] < 5 / 6 < interval["high"]
    k3 = {j["judge"]: j["criteria"]["k3"] for j in record["judges"]}
    assert k3["c"]["agreement"] == 1.0 and k3["a"]["agreement"] == 0.0
    with get_artifact_store() as store:
        saved = load_calibration(store, record["fingerprint"])
    assert saved is not None and saved.kappa == pytest.approx(1 / 6)


def test_a_second_reviewer_adds_a_version_of_labels_and_their_agreement_is_reported(
        judged_run: str, tmp_path: Path) -> None:
    first = write_labels(tmp_path / "ana.jsonl", "ana", LABELS, range(EPOCHS))
    assert runner.invoke(app, ["calibrate", judged_run, "--labels", str(first)]).exit_code == 0
    bo = {**LABELS, "k3": [True, False, False]}  # bo disagrees with ana on k3 in epoch 0
    second = tmp_path / "bo.csv"
    second.write_text("task_id,epoch,verifier_id,criterion_id,label,note\n" + "".join(
        f"reply,0,rubric,{cid},{'pass' if v[0] else 'fail'},\n" for cid, v in bo.items()))
    done = runner.invoke(app, ["calibrate", judged_run, "--labels", str(second), "--reviewer", "bo"])
    assert done.exit_code == 0, done.output
    # 4 items labelled twice, 3 agreeing: p_o 3/4; ana passes 2 of 4, bo 3 of 4: p_e 1/2, κ 1/2.
    assert "Reviewers (ana, bo) agree on 75% of 4 label pairs over 4 items, κ 0.50." in done.output
    assert "11 labels (1 left out: reviewers split evenly)" in done.output
    with get_artifact_store() as store:
        versions = store.list_versions(labels_artifact_id("mail", "r1"))
    assert [v.version for v in versions] == ["1", "2"]  # the first reviewer's labels are still there


def test_a_label_that_names_no_judged_criterion_is_refused_with_its_place(judged_run: str, tmp_path: Path) -> None:
    bad = tmp_path / "labels.jsonl"
    bad.write_text(json.dumps({"task_id": "reply", "verifier_id": "rubric", "criterion_id": "k9", "label": "pass",
                               "reviewer": "ana"}) + "\n")
    done = runner.invoke(app, ["calibrate", judged_run, "--labels", str(bad)])
    assert done.exit_code == 2
    assert "labels.jsonl label 1: reply [seed 0, epoch 0] rubric/k9 is no judged criterion of this run; this run has " \
           "task runs: reply (seed 0, epoch 0), reply (seed 0, epoch 1), reply (seed 0, epoch 2); criteria: " \
           "rubric/k1, rubric/k2, rubric/k3, rubric/k4" in done.output
    bad.write_text('{"task_id": "reply", "verifier_id": "rubric", "criterion_id": "k1", "label": "pass"}\n')
    done = runner.invoke(app, ["calibrate", judged_run, "--labels", str(bad)])
    assert done.exit_code == 2 and "labels.jsonl line 1: reviewer: Field required (or pass --reviewer NAME)" in done.output
    # The template lists every judged criterion, without the judges' verdicts; filled in part, it imports that part.
    template = runner.invoke(app, ["calibrate", judged_run, "--template"])
    assert template.exit_code == 0, template.output
    rows = [json.loads(line) for line in template.output.splitlines()]
    assert [(r["epoch"], r["criterion_id"]) for r in rows] == [(e, f"k{n}") for e in range(EPOCHS) for n in range(1, 5)]
    assert {r["criterion"] for r in rows} == {""}  # this run froze no task document: no text to show
    assert all(r["label"] == "" and set(r) == {"task_id", "seed_index", "epoch", "verifier_id", "criterion_id",
                                               "criterion", "label", "note", "reviewer"} for r in rows)
    rows[0]["label"] = "pass"
    bad.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = runner.invoke(app, ["calibrate", judged_run, "--labels", str(bad), "--reviewer", "ana"])
    assert done.exit_code == 0, done.output
    assert "1 label imported on run mail/r1" in done.output and "; 1 label\n" in done.output
    assert "**Not calibrated:** κ undefined: the labels hold only `pass` (label some failing criteria) " \
           "(1 label: 1 pass, 0 fail)." in done.output
    bad.write_text('{"task_id": "reply", "verifier_id": "rubric", "criterion_id": "k1", "label": "maybe", '
                   '"reviewer": "ana"}\n')
    done = runner.invoke(app, ["calibrate", judged_run, "--labels", str(bad)])
    assert done.exit_code == 2 and "labels.jsonl line 1: label: Input should be 'pass' or 'fail'" in done.output
