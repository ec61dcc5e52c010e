"""The paired comparison: exact McNemar, the sign test and the paired bootstrap against hand-computed
values, pairing by task, seed and epoch, verdicts, setup differences and the gate."""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

import pytest

from prefect_agentenv.grading.outcome import Outcome
from prefect_agentenv.results import (
    AgentSetup,
    PublishedVersion,
    SetupFingerprint,
    TaskResult,
    TaskSnapshot,
    binomial_two_sided,
    check_gate,
    compare,
    mcnemar,
    paired_bootstrap,
    sign_test,
    summarize,
    summarize_sweep,
    sweep_markdown,
)
from prefect_agentenv.results.paired import EXACT_LIMIT, fewest_decisive_pairs
from prefect_agentenv.runtime.overrides import RunOverrides

SCRIPTED = SetupFingerprint(benchmark="mail", benchmark_version="1", package_version="0.1.0",
                            agents=[AgentSetup(name="assistant", agent_id="scripted", version="1.0.0")],
                            overrides={"a2a_agent_id": "scripted"})
LLM = SCRIPTED.model_copy(update={"agents": [AgentSetup(name="assistant", agent_id="llm", version="1.0.0",
                                                        model="mock")],
                                  "overrides": {"a2a_agent_id": "llm"}, "models": ["mock"]})


def result(task: str, outcome: str, score: float | None = None, *, seed: int = 0, epoch: int = 0,
           **extra: Any) -> TaskResult:
    kind = Outcome(outcome)
    value = {Outcome.PASSED: 1.0, Outcome.FAILED: 0.0, Outcome.TIMED_OUT: 0.0}.get(kind, score)
    status = "failed" if kind in (Outcome.FAILED, Outcome.TIMED_OUT) else "completed"
    return TaskResult(task_id=task, seed_index=seed, epoch=epoch, status=status, outcome=kind,
                      score=value if score is None else score, **extra)


def seeded(outcome: str, n: int = 8, **extra: Any) -> list[TaskResult]:
    """One task over ``n`` seeds, every run ending in ``outcome``."""
    return [result("reply", outcome, seed=i, tags=["mail"], **extra) for i in range(n)]


# -- the tests themselves ----------------------------------------------------------------------


@pytest.mark.parametrize(("k", "n", "expected"), [
    (0, 6, 2 / 64),             # 2 · C(6,0) / 2⁶
    (1, 9, 2 * 10 / 512),       # 2 · (C(9,0) + C(9,1)) / 2⁹
    (8, 8, 2 / 256),
    (2, 10, 2 * 56 / 1024),     # 2 · (1 + 10 + 45) / 2¹⁰
    (3, 6, 1.0),                # the middle: capped at 1
    (0, 0, 1.0),                # no trials, no evidence
])
def test_the_exact_binomial_test_matches_hand_computed_values(k: int, n: int, expected: float) -> None:
    assert binomial_two_sided(k, n) == pytest.approx(expected)
    assert binomial_two_sided(n - k, n) == pytest.approx(expected)  # symmetric


def test_the_binomial_test_does_not_overflow_with_many_trials() -> None:
    assert binomial_two_sided(1500, 3000) == pytest.approx(1.0, abs=0.02)
    assert 0 <= binomial_two_sided(1300, 3000) < 1e-12


def test_mcnemar_is_exact_on_the_discordant_pairs_and_ignores_the_concordant_ones() -> None:
    # 1 lost, 8 gained: 2 · (1 + 9) / 512, whatever the number of pairs that did not change.
    assert mcnemar(1, 8) == (pytest.approx(0.0390625), "exact")
    assert mcnemar(8, 0)[0] == pytest.approx(0.0078125)
    assert mcnemar(0, 0) == (1.0, "exact")


def test_mcnemar_above_the_exact_limit_is_the_continuity_corrected_chi_square() -> None:
    lost, gained = 600, 500  # χ² = (100 − 1)² / 1100 = 8.91
    p, method = mcnemar(lost, gained)
    assert method == "chi-square"
    assert p == pytest.approx(math.erfc(math.sqrt(99 ** 2 / 1100 / 2)))
    assert p == pytest.approx(binomial_two_sided(lost, lost + gained), abs=0.001)
    assert mcnemar(EXACT_LIMIT // 2, EXACT_LIMIT // 2)[1] == "exact"


def test_the_sign_test_leaves_ties_out() -> None:
    assert sign_test([-1, -0.5, 0, 0, -1, -0.2, -1, -1]) == pytest.approx(2 / 64)  # 6 down, none up
    assert sign_test([0.0, 0.0]) == 1.0


def test_the_paired_bootstrap_is_reproducible_with_its_seed() -> None:
    differences = [0.1 * (i % 7) - 0.3 for i in range(40)]
    first = paired_bootstrap(differences, seed=7)
    assert first == paired_bootstrap(differences, seed=7)
    assert first != paired_bootstrap(differences, seed=8)
    assert first is not None and first.low < sum(differences) / 40 < first.high


def test_the_paired_bootstrap_agrees_with_the_normal_interval_on_many_pairs() -> None:
    differences = [0.0, 1.0] * 200  # mean 0.5, standard error 0.5 / √400 = 0.025
    interval = paired_bootstrap(differences, 0.95, resamples=4000, seed=1)
    z = NormalDist().inv_cdf(0.975)
    assert interval is not None
    assert interval.low == pytest.approx(0.5 - z * 0.025, abs=0.01)
    assert interval.high == pytest.approx(0.5 + z * 0.025, abs=0.01)


@pytest.mark.parametrize(("confidence", "fewest"), [(0.95, 6), (0.9, 5), (0.99, 8)])
def test_the_fewest_decisive_pairs_are_where_two_over_two_to_the_n_first_falls_under_alpha(
        confidence: float, fewest: int) -> None:
    assert fewest_decisive_pairs(confidence) == fewest
    assert binomial_two_sided(0, fewest) < 1 - confidence <= binomial_two_sided(0, fewest - 1)


def test_the_paired_bootstrap_needs_two_pairs_and_is_exact_on_equal_differences() -> None:
    assert paired_bootstrap([0.4]) is None
    interval = paired_bootstrap([-1.0, -1.0, -1.0])
    assert interval is not None and (interval.low, interval.high) == (-1.0, -1.0)


# -- pairing and verdicts ----------------------------------------------------------------------


def test_a_known_drop_over_eight_seeded_runs_is_worse_with_its_effect_and_interval() -> None:
    comparison = compare(seeded("FAILED"), seeded("PASSED"), previous_run_id="base", current_run_id="now")

    overall = comparison.overall
    assert overall is not None and overall.verdict == "worse" and comparison.regressed
    assert overall.pass_fail is not None and overall.score is not None
    assert (overall.pass_fail.lost, overall.pass_fail.gained) == (8, 0)
    assert overall.pass_fail.p_value == pytest.approx(2 / 256)
    assert overall.pass_fail.difference == -1.0 and overall.score.difference == -1.0
    assert overall.score.interval is not None and overall.score.interval.high == -1.0
    assert comparison.regressions[0].startswith("all task runs worse: pass rate 100% → 0% over 8 pairs")
    assert [row.verdict for row in comparison.by_task] == ["tied"] * 8  # one pair per task: never enough alone


def test_a_rerun_with_the_same_outcomes_is_tied_with_no_difference() -> None:
    comparison = compare(seeded("PASSED"), seeded("PASSED"))
    assert comparison.overall is not None and comparison.overall.verdict == "tied"
    assert comparison.overall.score is not None and comparison.overall.score.difference == 0.0
    assert not comparison.regressions and not comparison.improvements and not comparison.regressed


def test_flips_both_ways_are_noise_and_tied() -> None:
    previous = seeded("PASSED", 4) + [result("reply", "FAILED", seed=i) for i in range(4, 8)]
    current = [result("reply", "FAILED", seed=i) for i in range(4)] + seeded("PASSED", 8)[4:]
    overall = compare(current, previous).overall
    assert overall is not None and overall.pass_fail is not None
    assert (overall.pass_fail.lost, overall.pass_fail.gained, overall.verdict) == (4, 4, "tied")


def test_a_gain_is_better() -> None:
    overall = compare(seeded("PASSED"), seeded("FAILED")).overall
    assert overall is not None and overall.verdict == "better"


def test_three_equal_score_drops_are_not_enough_for_a_verdict() -> None:
    """The bootstrap's interval of three equal differences has no width; the sign test (p = 0.25) holds it back."""
    previous = [result("t", "BELOW_ONE", 0.9, epoch=e) for e in range(3)]
    current = [result("t", "BELOW_ONE", 0.6, epoch=e) for e in range(3)]
    overall = compare(current, previous).overall
    assert overall is not None and overall.score is not None
    assert overall.score.interval is not None and overall.score.interval.high < 0
    assert overall.score.p_value == pytest.approx(0.25) and overall.verdict == "tied"


def test_pairs_match_by_task_seed_and_epoch_and_the_counts_say_what_was_shared() -> None:
    previous = seeded("PASSED", 3) + [result("gone", "PASSED"), result("reply", "PASSED", seed=0, epoch=1)]
    current = seeded("PASSED", 3) + [result("fresh", "PASSED"), result("reply", "UNSCORED", seed=1)]
    comparison = compare(current, previous)
    # reply seeds 0-2 epoch 0 are shared; seed 1 is UNSCORED now (the last result of its key wins).
    assert (comparison.pairs, comparison.unscored) == (2, 1)
    assert (comparison.only_current, comparison.only_previous) == (1, 2)
    assert (comparison.tasks_shared, comparison.tasks_current, comparison.tasks_previous) == (3, 4, 4)
    assert "2 task runs in both runs" in comparison.markdown() and "1 left out as UNSCORED" in comparison.markdown()


def test_runs_without_a_shared_task_run_have_nothing_to_compare() -> None:
    comparison = compare([result("a", "PASSED")], [result("b", "PASSED")])
    assert comparison.overall is None and not comparison.regressed
    assert "nothing to compare" in comparison.markdown()


def test_tags_and_axes_get_rows_and_an_errored_run_counts_zero_on_axes_only_the_baseline_shows() -> None:
    previous = [result("reply", "PASSED", seed=i, tags=["mail"], axis_scores={"tone": 1.0}) for i in range(8)]
    current = [result("reply", "FAILED", seed=i, tags=["mail"]) for i in range(8)]  # crashed before grading
    comparison = compare(current, previous)
    [tag] = comparison.by_tag
    [axis] = comparison.by_axis
    assert (tag.name, tag.pairs, tag.verdict) == ("mail", 8, "worse")
    assert (axis.name, axis.pairs, axis.verdict, axis.pass_fail) == ("tone", 8, "worse", None)
    assert axis.score is not None and axis.score.current_mean == 0.0


def test_the_comparison_is_the_same_on_every_run_of_it() -> None:
    previous = [result("t", "BELOW_ONE", 0.1 * (i % 9), seed=i) for i in range(30)]
    current = [result("t", "BELOW_ONE", 0.1 * ((i + 2) % 9), seed=i) for i in range(30)]
    assert compare(current, previous, seed=3) == compare(current, previous, seed=3)


# -- setups ------------------------------------------------------------------------------------


def test_a_comparison_names_the_agent_and_override_that_differ() -> None:
    comparison = compare(seeded("FAILED", setup=LLM), seeded("PASSED", setup=SCRIPTED))
    assert comparison.setup.known and not comparison.setup.same
    fields = {d.field: (d.previous, d.current) for d in comparison.setup.differences}
    assert fields["agent assistant"] == ("scripted 1.0.0", "llm 1.0.0 on mock")
    assert fields["overrides.a2a_agent_id"] == ("scripted", "llm")
    assert fields["models"] == (None, "mock")
    assert "setup differs: agent assistant: scripted 1.0.0 → llm 1.0.0 on mock" in comparison.setup.sentence()
    assert "**Setup differs:**" in comparison.markdown()


def test_the_same_setup_says_so_and_an_old_run_without_one_is_unknown() -> None:
    assert compare(seeded("PASSED", setup=SCRIPTED), seeded("PASSED", setup=SCRIPTED)).setup.sentence() == "same setup"
    old = compare(seeded("PASSED", setup=SCRIPTED), seeded("PASSED"))
    assert not old.setup.known and old.setup.unknown_runs == ["previous"]
    assert old.setup.sentence() == "setup unknown (the baseline run was recorded before results carried their setup)"


def test_shared_tasks_run_from_other_documents_are_named() -> None:
    def frozen(sha: str) -> list[TaskResult]:
        return seeded("PASSED", 2, setup=SCRIPTED, snapshot=TaskSnapshot(sha256=sha * 64, url="file:///x"))

    comparison = compare(frozen("b"), frozen("a"))
    [difference] = comparison.setup.differences
    assert difference.sentence() == ("task documents: 2 of 2 shared tasks ran from another document "
                                     "(reply [seed 0], reply [seed 1])")


def test_runs_of_two_published_versions_say_so() -> None:
    one = PublishedVersion(slug="mail", version="1", hash="a" * 64)
    two = PublishedVersion(slug="mail", version="2", hash="b" * 64)
    comparison = compare(seeded("PASSED", setup=SCRIPTED, published=two), seeded("PASSED", setup=SCRIPTED, published=one))
    [difference] = comparison.setup.differences
    assert difference.sentence() == "published: mail@1 (sha256 aaaaaaaaaaaa) → mail@2 (sha256 bbbbbbbbbbbb)"
    files = compare(seeded("PASSED", setup=SCRIPTED), seeded("PASSED", setup=SCRIPTED, published=one))
    assert files.setup.differences[0].current == "the benchmark's files"


def test_a_runs_summary_carries_its_merged_setup_and_a_digest_of_its_documents() -> None:
    results = seeded("PASSED", 2, setup=SCRIPTED, snapshot=TaskSnapshot(sha256="a" * 64, url="file:///x"))
    resumed = results + [results[0].model_copy(update={"setup": SCRIPTED.model_copy(
        update={"package_version": "0.2.0"})})]
    setup = summarize(resumed).setup
    assert setup is not None and setup.package_version == "0.2.0" and setup.mixed == ["package_version"]
    assert setup.documents == 2 and setup.documents_sha256 and len(setup.documents_sha256) == 64
    assert summarize(seeded("PASSED")).setup is None


def test_free_form_overrides_are_recorded_by_digest_only() -> None:
    recorded = RunOverrides.parse({"a2a_agent_id": "llm", "assistant.agent_config": '{"api_key": "sk-secret-123"}',
                                   "human_a2a_url": "https://u:pw@example.test/a2a", "model": "gpt-4.1"}).recorded()
    assert recorded["a2a_agent_id"] == "llm" and recorded["model"] == "gpt-4.1"
    assert recorded["assistant.agent_config"].startswith("sha256:") and len(recorded["assistant.agent_config"]) == 23
    assert "sk-secret-123" not in str(recorded) and "pw@" not in str(recorded)


# -- the gate ----------------------------------------------------------------------------------


def test_no_gate_is_none_and_a_mean_under_the_bar_fails() -> None:
    summary = summarize(seeded("PASSED", 2) + [result("x", "BELOW_ONE", 0.2)])
    assert check_gate(summary, None) is None
    gate = check_gate(summary, None, fail_under=0.9)
    assert gate is not None and not gate.passed and gate.reason == "mean score 0.733 is under 0.9"
    passed = check_gate(summary, None, fail_under=0.5)
    assert passed is not None and passed.passed and passed.reason == "mean score 0.733 is at least 0.5"


def test_a_run_with_nothing_counted_fails_a_minimum_score() -> None:
    gate = check_gate(summarize([result("x", "UNSCORED")]), None, fail_under=0.1)
    assert gate is not None and not gate.passed and "no task run was counted" in gate.reason


def test_the_regression_gate_fails_on_a_real_drop_and_passes_on_a_rerun_and_a_first_run() -> None:
    drop = compare(seeded("FAILED", setup=LLM), seeded("PASSED", setup=SCRIPTED), previous_run_id="base")
    gate = check_gate(summarize(seeded("FAILED")), drop, fail_on_regression=True)
    assert gate is not None and not gate.passed
    assert gate.reason.startswith("worse than run base: all task runs worse: pass rate 100% → 0% over 8 pairs")
    assert "setup differs: agent assistant: scripted 1.0.0 → llm 1.0.0 on mock" in gate.reason
    assert "\n" not in gate.reason
    rerun = compare(seeded("PASSED", setup=SCRIPTED), seeded("PASSED", setup=SCRIPTED), previous_run_id="base")
    kept = check_gate(summarize(seeded("PASSED")), rerun, fail_on_regression=True)
    assert kept is not None and kept.passed and kept.reason.startswith("not worse than run base: all task runs tied")
    first = check_gate(summarize(seeded("PASSED")), None, fail_on_regression=True)
    assert first is not None and first.passed and first.reason == "no baseline run to compare with"


def test_the_regression_gate_looks_at_all_task_runs_together() -> None:
    """One task loses 6 of its 8 epochs, another gains 6: each task row is marked, all task runs
    together are tied, and the gate passes (rows per tag, axis and task are for a person to read)."""
    previous = [result(t, "PASSED" if (t == "t0" or e >= 6) else "FAILED", epoch=e) for t in ("t0", "t1")
                for e in range(8)]
    current = [result(t, "PASSED" if (t == "t1" or e >= 6) else "FAILED", epoch=e) for t in ("t0", "t1")
               for e in range(8)]
    comparison = compare(current, previous)
    assert [(row.name, row.verdict) for row in comparison.by_task] == [("t0", "worse"), ("t1", "better")]
    assert comparison.overall is not None and comparison.overall.verdict == "tied"
    gate = check_gate(summarize(current), comparison, fail_on_regression=True)
    assert gate is not None and gate.passed
    assert comparison.regressions == [comparison.by_task[0].sentence()]


# -- verdicts and the intervals the rows show ------------------------------------------------------


def _drops(n: int) -> tuple[list[TaskResult], list[TaskResult]]:
    """``n`` pairs whose score each drops from 0.8 to 0.467 (and fail the pass either way)."""
    return ([result("t", "BELOW_ONE", 0.467, seed=i) for i in range(n)],
            [result("t", "BELOW_ONE", 0.8, seed=i) for i in range(n)])


def test_five_pairs_that_all_drop_are_too_few_to_tell_and_no_row_shows_an_interval() -> None:
    """The smallest sign-test p on 5 pairs is 2/32 = 0.0625: nothing could be worse at 95%."""
    overall = compare(*_drops(5)).overall
    assert overall is not None and overall.score is not None
    assert (overall.verdict, overall.too_few_pairs, overall.min_pairs) == ("tied", True, 6)
    assert overall.score.p_value == pytest.approx(0.0625) and overall.score.note == "too few pairs to tell"
    assert overall.score.interval is not None  # kept in the JSON record, but shown nowhere
    assert overall.reason is not None and overall.reason.startswith("too few pairs to tell: 5 pairs")
    markdown = compare(*_drops(5)).markdown()
    assert "95% CI" not in markdown and "| mean score | 5 | 0.800 | 0.467 | -0.333 | sign test p=0.062 | too few" in markdown
    assert overall.sentence().startswith("all task runs: too few pairs to tell (5 of the 6 pairs a test needs)")
    sweep = summarize_sweep([*[r.model_copy(update={"cell": "m=a"}) for r in _drops(5)[1]],
                             *[r.model_copy(update={"cell": "m=b"}) for r in _drops(5)[0]]],
                            [("m=a", {"m": "a"}), ("m=b", {"m": "b"})], {"m": ["a", "b"]})
    pair_line = sweep_markdown(sweep).split("###")[1].splitlines()[-3]
    assert pair_line.endswith("| -0.333 | p=0.062 | too few pairs to tell |") and "95%" not in pair_line


def test_thirty_pairs_that_all_drop_are_worse_and_show_the_interval_that_decided() -> None:
    comparison = compare(*_drops(30))
    overall = comparison.overall
    assert overall is not None and overall.score is not None
    assert (overall.verdict, overall.too_few_pairs, overall.score.note) == ("worse", False, None)
    assert overall.score.interval is not None and overall.score.interval.high < 0
    assert overall.reason == "worse by the paired bootstrap with the sign test (p<0.0001)"
    assert "| mean score | 30 | 0.800 | 0.467 | -0.333, 95% CI -0.333 to -0.333 | sign test p<0.0001 | **worse** |" in (
        comparison.markdown())
    dumped = comparison.model_dump(mode="json")["overall"]
    assert {"min_pairs", "too_few_pairs", "reason", "verdict", "pairs"} <= dumped.keys()


def test_an_interval_the_sign_test_does_not_confirm_says_so_in_its_row() -> None:
    """8 pairs, 5 drop and 3 stay: the bootstrap excludes 0, the sign test on 5 changes cannot confirm it."""
    previous = [result("t", "BELOW_ONE", 0.8 if i < 5 else 0.5, seed=i) for i in range(8)]
    current = [result("t", "BELOW_ONE", 0.47 if i < 5 else 0.5, seed=i) for i in range(8)]
    overall = compare(current, previous).overall
    assert overall is not None and overall.score is not None and not overall.too_few_pairs
    assert overall.verdict == "tied" and overall.score.interval is not None and overall.score.interval.high < 0
    assert overall.score.note == "not confirmed by the sign test"
    assert overall.reason == ("tied: the mean score's bootstrap interval excludes 0, but the sign test (p=0.062) "
                              "does not confirm it")
    assert "— not confirmed by the sign test" in overall.sentence()


def test_a_comparison_recorded_before_the_reasons_reads_as_it_did() -> None:
    dumped = compare(*_drops(30)).model_dump(mode="json")
    for row in [dumped["overall"], *dumped["by_task"]]:
        for key in ("min_pairs", "too_few_pairs", "reason"):
            row.pop(key)
    old = type(compare(*_drops(30))).model_validate(dumped)
    assert old.overall is not None and old.overall.verdict == "worse" and not old.overall.too_few_pairs
    assert "95% CI -0.333 to -0.333" in old.markdown()
