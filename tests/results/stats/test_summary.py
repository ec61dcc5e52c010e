"""Benchmark statistics: estimators checked against hand-computed values, the denominator policy,
breakdowns, comparisons and the markdown artifact."""

from __future__ import annotations

import math
from typing import Any

import pytest

from prefect_agentenv.grading.outcome import Outcome
from prefect_agentenv.results import (
    FailureCause,
    RetriedAttempt,
    RunKey,
    TaskResult,
    axis_scores,
    compare,
    mean_interval,
    pass_at_k,
    pass_hat_k,
    student_t_quantile,
    summarize,
    summary_markdown,
    task_changes,
    wilson_interval,
)
from prefect_agentenv.results.store.run_store import result_from_report
from prefect_agentenv.results.task_report import TaskReport

SCORES = {Outcome.PASSED: 1.0, Outcome.FAILED: 0.0, Outcome.TIMED_OUT: 0.0, Outcome.UNSCORED: None}


def run(task_id: str, outcome: Outcome | str, score: float | None = None, *, epoch: int = 0, seed_index: int = 0,
        **extra: Any) -> TaskResult:
    outcome = Outcome(outcome)
    status = "failed" if outcome in (Outcome.FAILED, Outcome.TIMED_OUT) else "completed"
    return TaskResult(task_id=task_id, epoch=epoch, seed_index=seed_index, status=extra.pop("status", status),
                      outcome=outcome, score=SCORES.get(outcome, score) if score is None else score, **extra)


# -- pass@k and pass^k --------------------------------------------------------------------------


@pytest.mark.parametrize(("k", "expected"), [(1, 1 / 3), (2, 2 / 3), (3, 1.0)])
def test_pass_at_k_of_one_pass_in_three_runs_matches_the_hand_computed_value(k: int, expected: float) -> None:
    # 1 − C(2, k) / C(3, k): 1 − 2/3, 1 − 1/3, 1 − 0/1
    assert pass_at_k(3, 1, k) == pytest.approx(expected)


@pytest.mark.parametrize(("k", "expected"), [(1, 1 / 3), (2, 0.0), (3, 0.0)])
def test_pass_hat_k_of_one_pass_in_three_runs_matches_the_hand_computed_value(k: int, expected: float) -> None:
    # C(1, k) / C(3, k): 1/3, 0/3, 0/1
    assert pass_hat_k(3, 1, k) == pytest.approx(expected)


def test_pass_hat_k_of_two_passes_in_three_runs_is_one_third_for_k_two() -> None:
    assert pass_hat_k(3, 2, 2) == pytest.approx(1 / 3)  # C(2,2)/C(3,2)


def test_a_k_larger_than_the_runs_is_refused() -> None:
    with pytest.raises(ValueError, match="k=4"):
        pass_at_k(3, 1, 4)


def test_the_summary_averages_pass_at_k_over_tasks_with_k_defaulting_to_the_epochs() -> None:
    results = [run("a", "PASSED", epoch=0), run("a", "BELOW_ONE", 0.5, epoch=1), run("a", "FAILED", epoch=2),
               run("b", "PASSED", epoch=0), run("b", "PASSED", epoch=1), run("b", "PASSED", epoch=2)]

    summary = summarize(results)
    assert summary.k == 3
    assert summary.pass_at_k == pytest.approx((1.0 + 1.0) / 2)
    assert summary.pass_hat_k == pytest.approx((0.0 + 1.0) / 2)

    at_one = summarize(results, k=1)
    assert at_one.pass_at_k == pytest.approx((1 / 3 + 1.0) / 2)
    assert at_one.pass_k_tasks == 2


def test_each_seed_of_a_task_is_its_own_problem_for_pass_at_k() -> None:
    results = [run("a", "PASSED", seed_index=0, epoch=0), run("a", "PASSED", seed_index=0, epoch=1),
               run("a", "FAILED", seed_index=1, epoch=0), run("a", "FAILED", seed_index=1, epoch=1)]

    summary = summarize(results)
    assert summary.tasks == 2
    assert summary.pass_at_k == pytest.approx(0.5)


def test_tasks_with_fewer_counted_runs_than_k_are_left_out_of_pass_at_k() -> None:
    results = [run("a", "PASSED", epoch=0), run("a", "PASSED", epoch=1),
               run("b", "PASSED", epoch=0), run("b", "UNSCORED", epoch=1)]

    summary = summarize(results, k=2)
    assert summary.pass_k_tasks == 1
    assert summary.pass_at_k == 1.0


# -- intervals ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("df", "expected"), [(1, 12.706), (2, 4.303), (5, 2.571), (10, 2.228), (30, 2.042)])
def test_the_t_quantile_matches_the_published_table(df: int, expected: float) -> None:
    assert student_t_quantile(0.975, df) == pytest.approx(expected, abs=1e-3)


def test_the_mean_interval_contains_the_mean_and_narrows_with_more_runs() -> None:
    small = [1.0, 0.0, 0.5, 1.0]
    large = small * 10

    narrow, wide = mean_interval(large, bounds=None), mean_interval(small, bounds=None)
    assert wide is not None and narrow is not None
    assert wide.contains(0.625) and narrow.contains(0.625)
    assert narrow.half_width < wide.half_width
    # mean ± t(0.975, 3) · s/√n with s = 0.4787: 0.625 ± 3.182 · 0.2394
    assert wide.half_width == pytest.approx(3.1824 * 0.47871 / 2, abs=1e-3)


def test_the_mean_interval_of_scores_is_clipped_to_zero_and_one() -> None:
    interval = mean_interval([1.0, 0.0, 0.5, 1.0])
    assert interval is not None
    assert (interval.low, interval.high) == (0.0, 1.0)


def test_a_single_run_has_no_interval() -> None:
    assert mean_interval([0.7]) is None


def test_the_wilson_interval_of_eight_in_ten_matches_the_hand_computed_value() -> None:
    interval = wilson_interval(8, 10)
    assert interval is not None
    assert (interval.low, interval.high) == pytest.approx((0.4902, 0.9433), abs=1e-4)


def test_the_wilson_interval_of_a_perfect_score_is_not_zero_width() -> None:
    interval = wilson_interval(5, 5)
    assert interval is not None
    assert interval.high == 1.0 and interval.low < 1.0


# -- denominator policy -------------------------------------------------------------------------


def test_errored_runs_count_as_zero_and_unscored_runs_are_left_out() -> None:
    results = [run("a", "PASSED"), run("b", "BELOW_ONE", 0.5), run("c", "FAILED"), run("d", "TIMED_OUT"),
               run("e", "UNSCORED")]

    summary = summarize(results)
    counts = summary.counts
    assert (counts.passed, counts.below_one, counts.failed, counts.timed_out, counts.unscored) == (1, 1, 1, 1, 1)
    assert (counts.total, counts.denominator, counts.errored, counts.failed_to_pass) == (5, 4, 2, 1)
    assert summary.mean_score == pytest.approx((1.0 + 0.5 + 0 + 0) / 4)
    assert summary.pass_rate == pytest.approx(1 / 4)
    assert summary.mean_score_ci is not None and summary.mean_score_ci.contains(summary.mean_score)
    assert summary.pass_rate_ci is not None and summary.pass_rate_ci.contains(0.25)


def test_a_crashed_run_counts_as_zero_even_if_it_carries_a_score() -> None:
    summary = summarize([run("a", "PASSED"), run("b", "FAILED", 0.9, status="crashed")])
    assert summary.mean_score == pytest.approx(0.5)


def test_only_unscored_runs_give_no_mean_and_no_pass_rate() -> None:
    summary = summarize([run("a", "UNSCORED"), run("b", "UNSCORED")])
    assert summary.mean_score is None and summary.pass_rate is None and summary.mean_score_ci is None
    assert summary.counts.unscored == 2


def _infra(excluded: bool = False) -> FailureCause:
    return FailureCause(kind="infrastructure", reason="deploy_failed", retryable=True, step_id="env",
                        error_type="DeployError", message="'crm' exited before it was ready: exit code 3",
                        excluded=excluded)


def test_infrastructure_failures_count_as_zero_by_default_and_are_counted_apart() -> None:
    wrong = FailureCause(kind="agent", reason="below_one")
    results = [run("a", "PASSED", attempts=2, retried=[RetriedAttempt(failure=_infra())]),
               run("b", "BELOW_ONE", 0.5, failure=wrong), run("c", "FAILED", status="crashed", failure=_infra()),
               run("d", "UNSCORED")]

    summary = summarize(results)
    assert summary.mean_score == pytest.approx(0.5) and summary.counts.denominator == 3
    assert summary.counts.excluded == 0 and summary.headline.infrastructure_failed == 1
    f = summary.failures
    assert (f.agent, f.infrastructure, f.retried, f.recovered) == (1, 1, 1, 1)
    assert f.infrastructure_rate == pytest.approx(1 / 4)
    assert (f.agent_reasons, f.infrastructure_reasons) == ({"below_one": 1}, {"deploy_failed": 1})


def test_excluded_infrastructure_failures_leave_the_mean_pass_rate_pass_at_k_tags_and_axes() -> None:
    results = [run("a", "PASSED", tags=["x"], axis_scores={"correctness": 1.0}),
               run("a", "FAILED", epoch=1, tags=["x"], failure=_infra(excluded=True)),
               run("b", "BELOW_ONE", 0.5, tags=["x"], axis_scores={"correctness": 0.5})]

    summary = summarize(results)
    assert (summary.counts.failed, summary.counts.excluded, summary.counts.denominator) == (1, 1, 2)
    assert summary.mean_score == pytest.approx(0.75) and summary.pass_rate == pytest.approx(0.5)
    assert summary.by_tag["x"].n == 2 and summary.by_tag["x"].unscored == 0
    assert summary.by_axis["correctness"].n == 2 and summary.by_axis["correctness"].mean == pytest.approx(0.75)
    assert summary.pass_k_tasks == 0  # task a has one counted run of its two epochs: not enough for k=2
    at_1 = summarize(results, k=1)
    assert (at_1.pass_k_tasks, at_1.pass_at_k) == (2, pytest.approx(0.5))  # a: 1 of 1 passed, b: 0 of 1
    assert "left out of both as well" in summary.denominator_policy
    markdown = summary_markdown(summary, results=results, alert="The benchmark failed: too many")
    assert markdown.startswith("# Benchmark\n\n**The benchmark failed: too many**\n")
    assert "| of FAILED, infrastructure failures excluded (not counted) | 1 |" in markdown
    assert "FAILED (infrastructure: deploy_failed, excluded)" in markdown
    assert "They are left out of the mean and the pass rate." in markdown


def test_a_result_written_before_runs_were_classified_still_loads_and_counts_as_before() -> None:
    line = ('{"task_id": "a", "seed_index": 0, "epoch": 0, "status": "crashed", "outcome": "FAILED", "score": 0.0,'
            ' "error": "the task could not run", "run_key": ["a", 0, 0]}')
    old = TaskResult.model_validate_json(line)
    assert (old.failure, old.attempts, old.retried, old.counted, old.rerun_on_resume) == (None, 1, [], True, True)
    assert summarize([old]).failures.infrastructure == 0


def test_the_last_result_of_a_run_key_wins_after_a_resume() -> None:
    summary = summarize([run("a", "FAILED"), run("b", "PASSED"), run("a", "PASSED")])
    assert summary.counts.total == 2
    assert summary.mean_score == 1.0


# -- breakdowns ---------------------------------------------------------------------------------


def test_each_tag_gets_its_own_mean_pass_rate_and_count() -> None:
    results = [run("a", "PASSED", tags=["fax", "auth"]), run("b", "BELOW_ONE", 0.4, tags=["fax"]),
               run("c", "UNSCORED", tags=["auth"])]

    by_tag = summarize(results).by_tag
    assert by_tag["fax"].n == 2 and by_tag["fax"].mean == pytest.approx(0.7) and by_tag["fax"].pass_rate == 0.5
    assert by_tag["auth"].n == 1 and by_tag["auth"].mean == 1.0 and by_tag["auth"].unscored == 1


def test_axis_scores_are_the_weighted_mean_of_the_rows_carrying_each_axis() -> None:
    verifications = {
        "state": {"score": 0.5, "results": [
            {"id": "a", "result": "pass", "score": 1.0, "weight": 3, "axis": "correctness"},
            {"id": "b", "result": "fail", "score": 0.0, "weight": 1, "axis": "correctness"},
            {"id": "c", "result": "pass", "score": 1.0, "axis": "safety"},
            {"id": "d", "result": "pass", "score": 1.0},
        ]},
        "judge": {"score": 0.0, "weight": 2, "results": [
            {"id": "e", "result": "fail", "score": 0.0, "axis": "safety"},
        ]},
        "folded": {"score": 1.0, "weight": 0, "results": [{"id": "f", "result": "pass", "score": 1.0, "axis": "tone"}]},
        "cut": {"skipped": True, "score": None, "results": [{"id": "g", "score": 1.0, "axis": "tone"}]},
    }

    # correctness: (3·1 + 1·0) / 4; safety: (1·1 + 2·0) / 3 (the judge's weight 2 scales its row)
    expected = {"correctness": 0.75, "safety": 1 / 3}
    assert axis_scores(verifications, "exclude") == pytest.approx(expected)
    assert axis_scores(verifications) == pytest.approx({**expected, "tone": 0.0})  # the skipped row counts 0


def test_a_skipped_verifiers_axes_count_zero_under_skip_policy_zero_and_stay_out_under_exclude() -> None:
    verifications = {
        "state": {"score": 1.0, "results": [{"id": "a", "result": "pass", "score": 1.0, "axis": "correctness"}]},
        # skipped (truncated reply): no rows, the axes its rubric criteria carry
        "judge": {"skipped": True, "skip_reason": "truncated", "score": None, "weight": 2, "results": [],
                  "axes": ["correctness", "communication"]},
    }
    assert axis_scores(verifications, "zero") == pytest.approx({"correctness": 1 / 3, "communication": 0.0})
    assert axis_scores(verifications, "exclude") == {"correctness": 1.0}
    report = TaskReport(task_id="t", status="completed", outcome="BELOW_ONE", score=1 / 3, started_at="now",
                        duration_s=1.0, steps=[], context={"metadata": {"verifications": verifications}})
    assert result_from_report(report, RunKey("t")).axis_scores["communication"] == 0.0
    assert "communication" not in result_from_report(report, RunKey("t"), skip_policy="exclude").axis_scores


def test_a_penalty_row_lowers_its_axis() -> None:
    verifications = {"rubric": {"score": 0.5, "results": [
        {"id": "ok", "result": "pass", "score": 1.0, "weight": 2, "axis": "safety"},
        {"id": "leak", "result": "pass", "score": 1.0, "weight": -1, "axis": "safety"},
    ]}}
    assert axis_scores(verifications) == {"safety": 0.5}


def test_per_axis_means_count_an_errored_run_as_zero_on_its_tasks_axes() -> None:
    results = [run("a", "PASSED", epoch=0, axis_scores={"correctness": 1.0, "safety": 1.0}),
               run("a", "BELOW_ONE", 0.5, epoch=1, axis_scores={"correctness": 0.5, "safety": 1.0}),
               run("a", "TIMED_OUT", epoch=2),
               run("b", "PASSED", axis_scores={"tone": 1.0})]

    by_axis = summarize(results).by_axis
    assert by_axis["correctness"].n == 3 and by_axis["correctness"].mean == pytest.approx(0.5)
    assert by_axis["safety"].mean == pytest.approx(2 / 3)
    assert by_axis["tone"].n == 1 and by_axis["tone"].mean == 1.0


# -- task changes (the HTML report's trend: untested) ---------------------------------------------------------------------------------


def previous_and_current() -> tuple[list[TaskResult], list[TaskResult]]:
    previous = [run("steady", "PASSED"), run("broken", "PASSED"), run("slipping", "BELOW_ONE", 0.9),
                run("better", "BELOW_ONE", 0.2), run("gone", "PASSED")]
    current = [run("steady", "PASSED"), run("broken", "FAILED"), run("slipping", "BELOW_ONE", 0.7),
               run("better", "PASSED"), run("fresh", "BELOW_ONE", 0.5)]
    return previous, current


def test_the_task_changes_flags_a_task_that_no_longer_passes_and_a_score_drop() -> None:
    previous, current = previous_and_current()

    comparison = task_changes(current, previous, threshold=0.05)
    kinds = {c.task_id: c.kind for c in comparison.changes}
    assert kinds == {"steady": "unchanged", "broken": "regressed", "slipping": "regressed", "better": "improved",
                     "fresh": "new", "gone": "missing"}
    assert comparison.has_regressions
    assert any("broken" in r and "passed before" in r for r in comparison.regressions)
    assert any("slipping" in r and "0.900 → 0.700" in r for r in comparison.regressions)


def test_the_task_changes_reports_mean_and_pass_rate_deltas() -> None:
    previous, current = previous_and_current()

    comparison = task_changes(current, previous)
    assert comparison.mean_score_delta == pytest.approx((1 + 0 + 0.7 + 1 + 0.5) / 5 - (1 + 1 + 0.9 + 0.2 + 1) / 5)
    assert comparison.pass_rate_delta == pytest.approx(2 / 5 - 3 / 5)


def test_a_score_change_within_the_threshold_is_unchanged() -> None:
    comparison = task_changes([run("a", "BELOW_ONE", 0.78)], [run("a", "BELOW_ONE", 0.8)], threshold=0.05)
    assert comparison.changes[0].kind == "unchanged" and not comparison.has_regressions


def test_a_task_that_became_unscored_is_flagged() -> None:
    comparison = task_changes([run("a", "UNSCORED"), run("b", "PASSED")], [run("a", "BELOW_ONE", 0.3), run("b", "PASSED")])
    assert comparison.of_kind("regressed")[0].reasons == ["scored before, unscored now"]


def test_a_mean_below_the_previous_interval_is_flagged() -> None:
    previous = [run(f"t{i}", "PASSED") for i in range(8)] + [run("t8", "BELOW_ONE", 0.9), run("t9", "BELOW_ONE", 0.9)]
    current = [run(f"t{i}", "BELOW_ONE", 0.93) for i in range(10)]

    comparison = task_changes(current, previous, threshold=0.05)
    assert comparison.mean_dropped_beyond_ci
    assert comparison.regressions[0].startswith("mean score 0.930 is below the previous run's 95% interval")


def test_a_small_drop_from_identical_previous_scores_is_not_flagged_as_beyond_the_interval() -> None:
    previous = [run(f"t{i}", "BELOW_ONE", 0.8) for i in range(5)]
    current = [run(f"t{i}", "BELOW_ONE", 0.8) for i in range(4)] + [run("t4", "BELOW_ONE", 0.78)]

    assert not task_changes(current, previous).mean_dropped_beyond_ci


# -- markdown -----------------------------------------------------------------------------------


def test_the_summary_markdown_carries_the_headline_counts_policy_and_tables() -> None:
    results = [
        run("a", "PASSED", tags=["fax"], axis_scores={"correctness": 1.0}, report_url="s3://b/runs/a/report.json",
            files={"out.pdf": "s3://b/artifacts/out.pdf"}, duration_s=12.25, seed={"patient": "p1"}),
        run("b", "BELOW_ONE", 0.5, tags=["fax"], axis_scores={"correctness": 0.5}),
        run("c", "TIMED_OUT", tags=["voice"]),
        run("d", "UNSCORED"),
    ]
    summary = summarize(results)
    previous = [run("a", "PASSED"), run("b", "PASSED"), run("c", "PASSED")]

    text = summary_markdown(summary, compare(results, previous, previous_run_id="nightly-1"), results,
                            title="Prior auth")
    assert text.startswith("# Prior auth")
    assert "**Mean score:** 0.500 (95% CI" in text and "Student t" in text
    assert "**Pass rate:** 33.3% (95% CI" in text and "Wilson" in text and "(1/3)" in text
    assert "pass@1" in text
    assert "| UNSCORED (not counted) | 1 |" in text and "**denominator** | **3** of 4" in text
    assert "UNSCORED runs are reported separately" in text
    assert "| fax | 2 | 0.750 | 50% | 0 |" in text
    assert "| correctness | 2 | 0.750 |" in text
    assert ("| a | patient=p1 | 0 | 1.000 | PASSED | 12.2 | "
            "[report](s3://b/runs/a/report.json) [out.pdf](s3://b/artifacts/out.pdf) |") in text
    assert "## Compared with run `nightly-1`" in text and "No regression at 95% confidence." in text


def test_a_task_result_survives_a_json_round_trip_with_its_run_key() -> None:
    result = run("a", "BELOW_ONE", 0.5, epoch=2, seed_index=1, seed={"x": 1})

    dumped = result.model_dump(mode="json")
    assert dumped["run_key"] == ["a", 1, 2, None]  # no sweep cell
    again = TaskResult.model_validate_json(result.model_dump_json())
    assert again == result and again.run_key == RunKey("a", 1, 2)
    assert math.isclose(again.score or 0, 0.5)
    swept = TaskResult.model_validate_json(result.model_copy(update={"cell": "model=m"}).model_dump_json())
    assert swept.run_key == RunKey("a", 1, 2, "model=m") and swept.run_key != again.run_key
    old = {k: v for k, v in dumped.items() if k not in ("cell", "run_key")}  # a line written before sweeps
    assert TaskResult.model_validate(old).cell is None
