"""A run's rubric scores by their judge setups' trust, and the gate on a calibrated judge."""

from __future__ import annotations

import pytest

from prefect_agentenv.grading.outcome import Outcome
from prefect_agentenv.results.judge_trust import judge_gate, trust_summary
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
    assert judge_gate(results, 0.8) == ("2 rubric score(s) rest on a judge setup that is not calibrated to κ 0.8 "
                                        "(tone: calibrated κ 0.72 (40 labels) ×2)")


def test_a_run_without_judged_rubrics_has_no_judges_summary_and_passes_the_gate() -> None:
    assert trust_summary([run(0)]) is None and judge_gate([run(0)], 0.9) is None
