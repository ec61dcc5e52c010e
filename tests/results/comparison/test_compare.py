"""A run against a baseline: pairing by task, seed and epoch, verdicts, the intervals rows show, and setup differences."""

from __future__ import annotations

import pytest

from prefect_agentenv.results import (
    PublishedVersion,
    TaskResult,
    TaskSnapshot,
    compare,
    summarize,
    summarize_sweep,
    sweep_markdown,
)
from prefect_agentenv.runtime.resources.overrides import RunOverrides

from ..result_rows import LLM, SCRIPTED, result, seeded

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
