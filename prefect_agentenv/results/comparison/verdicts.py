"""Why a paired row got its verdict, in words: which test decided, and why another did not count.

A row's verdict rests on tests (McNemar's on pass/fail; the paired bootstrap *and* the sign test
on scores), and a table shows each test's interval beside it. When an interval alone would say
something else than the verdict — a bootstrap interval that excludes 0 on five equal drops the
sign test cannot tell from chance — the row says so here rather than print the interval as if
it had decided. Below :func:`~.paired.fewest_decisive_pairs` no test can decide at all, and the
row says "too few pairs to tell".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from prefect_agentenv.results.stats.intervals import Interval
from prefect_agentenv.results.stats.summary_markdown import percentage

if TYPE_CHECKING:
    from prefect_agentenv.results.comparison.compare import PassFailTest, ScoreTest

TOO_FEW = "too few pairs to tell"
"""What a row with fewer pairs than any test needs shows instead of an interval and a verdict."""

Side = Literal["better", "worse", "tied"]


def interval_side(interval: Interval | None) -> Side:
    """What the interval alone would say: below 0 worse, above 0 better, else tied."""
    if interval is None:
        return "tied"
    return "worse" if interval.high < 0 else "better" if interval.low > 0 else "tied"


def too_few_reason(pairs: int, min_pairs: int, confidence: float, *, scores_only: bool = False) -> str:
    tests = "the sign test" if scores_only else "neither McNemar's test nor the sign test"
    can = "cannot reach" if scores_only else "can reach"
    return (f"{TOO_FEW}: {pairs} pair{'s' if pairs != 1 else ''}, and {tests} {can} {percentage(confidence)} "
            f"confidence on fewer than {min_pairs}, however the pairs changed")


def pass_fail_note(test: PassFailTest) -> str | None:
    """Set when the pass-rate interval would say otherwise than McNemar's test, which decides."""
    return None if interval_side(test.interval) == test.verdict else "McNemar's test decides, not this interval"


def score_note(test: ScoreTest) -> str | None:
    """Set when the score interval excludes 0 but the verdict, which needs the sign test too, is tied."""
    return None if interval_side(test.interval) == test.verdict else "not confirmed by the sign test"


def row_reason(verdict: Side, pass_fail: PassFailTest | None, score: ScoreTest | None, confidence: float) -> str:
    """``worse by McNemar's test (p=0.0078) and by the paired bootstrap with the sign test (p=0.0078)``, or
    why the row is tied."""
    if verdict != "tied":
        deciders = []
        if pass_fail is not None and pass_fail.verdict == verdict:
            deciders.append(f"McNemar's test ({_p(pass_fail.p_value)})")
        if score is not None and score.verdict == verdict:
            deciders.append(f"the paired bootstrap with the sign test ({_p(score.p_value)})")
        return f"{verdict} by " + " and by ".join(deciders)
    verdicts = {t.verdict for t in (pass_fail, score) if t is not None}
    if {"worse", "better"} <= verdicts:
        return "tied: McNemar's test and the scores disagree on the direction"
    notes = []
    if pass_fail is not None and pass_fail.note:
        notes.append(f"the pass rate's bootstrap interval excludes 0, but McNemar's test "
                     f"({_p(pass_fail.p_value)}) decides pass/fail")
    if score is not None and score.note:
        notes.append(f"the mean score's bootstrap interval excludes 0, but the sign test ({_p(score.p_value)}) "
                     "does not confirm it")
    return "tied: " + ("; ".join(notes) if notes else f"no test found a change at {percentage(confidence)} confidence")


def _p(p: float) -> str:
    return "p<0.0001" if p < 0.0001 else f"p={p:.2g}"
