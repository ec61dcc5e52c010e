"""Sampling task runs for labelling, stratified by the judge's verdict."""

from __future__ import annotations

from prefect_agentenv.grading.judge import JudgeCriterion
from prefect_agentenv.grading.judge_setup import JudgeIdentity, judge_setup
from prefect_agentenv.results.judges.calibration import JudgedCriterion
from prefect_agentenv.results.judges.label_sampling import sample_for_labelling

SETUP = judge_setup([JudgeIdentity(id="judge", model="mock", prompt="p")], [JudgeCriterion(id="k1", criterion="x")])


def judged(epoch: int, verdict: bool | None) -> JudgedCriterion:
    return JudgedCriterion(task_id="t", epoch=epoch, verifier_id="v", criterion_id="k1", setup=SETUP,
                           judges={"judge": verdict}, panel=verdict)


def test_a_rare_verdict_still_gets_its_share_and_the_same_seed_draws_the_same_runs() -> None:
    # 18 task runs the judge passed, 2 it failed: a sample of 5 holds both strata, in proportion (4 and 1).
    runs = [judged(e, e >= 2) for e in range(20)]
    sample = sample_for_labelling(runs, 5, seed=7)
    assert [s.stratum for s in sample].count("fail") == 1 and [s.stratum for s in sample].count("pass") == 4
    assert [s.key for s in sample] == [s.key for s in sample_for_labelling(runs, 5, seed=7)]


def test_an_unscored_run_is_a_stratum_of_its_own_and_a_small_run_is_taken_whole() -> None:
    runs = [judged(0, True), judged(1, False), judged(2, None)]
    assert [s.stratum for s in sample_for_labelling(runs, 10)] == ["pass", "fail", "unscored"]
