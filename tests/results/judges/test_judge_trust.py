"""A run's rubric scores by their judge setups' trust, and the gate on a calibrated judge."""

from __future__ import annotations

import pytest

from prefect_agentenv.grading.outcome import Outcome
from prefect_agentenv.results.judges.judge_trust import judge_gate, trust_summary
from prefect_agentenv.results.rows import RubricTrust, TaskResult


def run(epoch: int, *judges: RubricTrust) -> TaskResult:
    return TaskResult(task_id="t", epoch=epoch, status="completed", outcome=Outcome.PASSED, score=1.0,
                      judges=list(judges))


CALIBRATED = RubricTrust(verifier_id="tone", fingerprint="f1", calibrated=True, labels=40, kappa=0.72,
                         disagreement=0.5)
UNREAD = RubricTrust(verifier_id="facts", fingerprint="f2", calibrated=False, unscored=2, scored=False)


def test_a_verification_left_wholly_unscored_counts_its_criteria_but_no_score_rests_on_its_judge() -> None:
    results = [run(0, CALIBRATED, UNREAD), run(1, CALIBRATED.model_copy(update={"disagreement": 0.0}))]
    summary = trust_summary(results)
    assert summary is not None
    assert (summary.rubric_scores, summary.calibrated, summary.uncalibrated, summary.setups) == (2, 2, 0, 1)
    assert summary.unscored_criteria == 2 and summary.mean_disagreement == pytest.approx(0.25)
    assert "**2 criteria unscored**" in summary.sentence() and "lowest κ 0.72" in summary.sentence()
    assert judge_gate(results, 0.7) is None
    assert judge_gate(results, 0.8) == ("2 rubric scores rest on judge setups not calibrated to κ 0.8 "
                                        "(tone: κ 0.72 below the gate's 0.8 (40 labels) ×2)")


def test_a_run_without_judged_rubrics_has_no_judges_summary_and_passes_the_gate() -> None:
    assert trust_summary([run(0)]) is None and judge_gate([run(0)], 0.9) is None


def test_against_the_gates_kappa_a_setup_below_it_or_undefined_is_never_called_calibrated() -> None:
    gated = {"required_kappa": 0.75}
    below = CALIBRATED.model_copy(update=gated)
    undefined = RubricTrust(verifier_id="facts", fingerprint="f3", calibrated=False, labels=8, mock=True,
                            shortfall="κ undefined: the labels hold only `pass` (label some failing criteria) "
                                      "(8 labels: 8 pass, 0 fail)", required_kappa=0.75)
    summary = trust_summary([run(0, below, undefined)])
    assert summary is not None
    assert (summary.calibrated, summary.below, summary.not_counted, summary.uncalibrated, summary.mock) == (0, 1, 1, 0, 1)
    assert summary.sentence() == (
        "0 of 2 rubric scores rest on judge setups calibrated to the gate's κ 0.75; lowest κ 0.72; "
        "**1 below the gate's κ 0.75**; **1 not calibrated: κ undefined: the labels hold only `pass` (label some "
        "failing criteria) (8 labels: 8 pass, 0 fail)**; panel disagreement 0.50; "
        "**1 judged by the mock model: every criterion passes unless scripted**")
    assert below.mark() == "κ 0.72 below the gate's 0.75 (40 labels)"
    assert judge_gate([run(0, undefined)], 0.1) == (
        "1 rubric score rests on a judge setup not calibrated to κ 0.1 (facts: not calibrated: κ undefined: the "
        "labels hold only `pass` (label some failing criteria) (8 labels: 8 pass, 0 fail) ×1)")
