"""Two benchmark runs compared pair by pair: matched by task, seed and epoch, tested, and marked.

Each ``(task_id, seed_index, epoch)`` both runs attempted is a pair. Over the pairs counted in
both (UNSCORED on either side leaves a pair out, as the denominator policy says), for all task
runs, per tag, per axis and per task ``(task_id, seed_index)``:

* **pass/fail** — exact McNemar on the discordant pairs (:func:`~.paired.mcnemar`); the effect is
  the change in pass rate, with a paired-bootstrap interval;
* **score** — the mean paired difference with a paired-bootstrap interval
  (:func:`~.paired.paired_bootstrap`, seeded) and the exact sign test (:func:`~.paired.sign_test`).

At ``confidence`` (α = 1 − confidence) a pass/fail change is *worse* or *better* when McNemar's
p < α; a score change when its interval excludes 0 **and** the sign test's p < α (with few pairs
the bootstrap interval alone is too narrow to trust). A row is worse when a test says worse and
none says better, better the other way round, else tied. A row with fewer pairs than either exact
test needs to reach ``confidence`` (:func:`~.paired.fewest_decisive_pairs`: 6 at 95%) is tied and
marked ``too_few_pairs``; every row says in ``reason`` which test decided it (:mod:`.verdicts`). Runs of different benchmarks or
versions are compared on the keys they share; the comparison says how many, and names every
difference of setup (:func:`~.setup.compare_setups`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from statistics import fmean
from typing import Literal, NamedTuple

from pydantic import Field

from prefect_agentenv.results.comparison.compare_markdown import comparison_markdown, row_sentence
from prefect_agentenv.results.comparison.verdicts import TOO_FEW, pass_fail_note, row_reason, score_note, too_few_reason
from prefect_agentenv.results.rows import RunKey, StatsModel, TaskResult, latest_per_run_key
from prefect_agentenv.results.stats.intervals import DEFAULT_CONFIDENCE, Interval
from prefect_agentenv.results.stats.paired import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    fewest_decisive_pairs,
    mcnemar,
    paired_bootstrap,
    sign_test,
)
from prefect_agentenv.results.stats.run_setup import SetupComparison, compare_setups
from prefect_agentenv.results.stats.summary import run_axis_values, task_axes

Verdict = Literal["better", "worse", "tied"]
RowKind = Literal["overall", "tag", "axis", "task"]


class PassFailTest(StatsModel):
    """Pass/fail of the pairs of one row: McNemar's test and the change in pass rate."""

    previous_rate: float
    current_rate: float
    difference: float
    """Current minus previous pass rate: the effect size."""
    interval: Interval | None = None
    """Paired-bootstrap interval of the difference (none below 2 pairs)."""
    lost: int
    """Pairs that passed in the previous run and not in this one."""
    gained: int
    """Pairs that pass in this run and did not in the previous one."""
    p_value: float
    """Two-sided p-value of McNemar's test."""
    method: str
    """``exact`` (binomial), or ``chi-square`` above 1,000 discordant pairs."""
    verdict: Verdict
    note: str | None = None
    """Set when ``interval`` alone would say otherwise than ``verdict``: McNemar's test decides, and
    the note says so; ``too few pairs to tell`` when the row has fewer pairs than any test needs."""


class ScoreTest(StatsModel):
    """Scores of the pairs of one row: the mean paired difference, its interval and the sign test."""

    previous_mean: float
    current_mean: float
    difference: float
    """Mean of (current − previous) over the pairs: the effect size."""
    interval: Interval | None = None
    """Paired-bootstrap interval of the difference (none below 2 pairs)."""
    p_value: float
    """Two-sided p-value of the exact sign test on the differences."""
    verdict: Verdict
    note: str | None = None
    """Set when ``interval`` alone would say otherwise than ``verdict`` (which needs the interval *and*
    the sign test): why it did not count; ``too few pairs to tell`` below the row's ``min_pairs``."""


class PairedRow(StatsModel):
    """All task runs, a tag, an axis or a task: its pairs, tests and verdict."""

    kind: RowKind
    name: str
    """The tag, the axis or the task id (``all`` for the overall row)."""
    seed_index: int | None = None
    """The seed, for a task row."""
    pairs: int
    pass_fail: PassFailTest | None = None
    """Not for axes: an axis has a score, not a pass."""
    score: ScoreTest | None = None
    verdict: Verdict
    min_pairs: int | None = None
    """The fewest pairs with which a test can decide at the comparison's confidence (6 at 95%);
    ``None`` in comparisons recorded before it was kept."""
    too_few_pairs: bool = False
    """Fewer pairs than ``min_pairs``: no result, however lopsided, is told apart from chance, so the
    verdict is ``tied`` and the row reads "too few pairs to tell" instead of showing an interval."""
    reason: str | None = None
    """Why the verdict, as the row says it: which test decided, and why another did not count."""

    def sentence(self) -> str:
        """``tag mail: pass rate 100% → 0% over 8 pairs (…)``: the row in one line."""
        return row_sentence(self)


class Comparison(StatsModel):
    """A benchmark run compared pair by pair with a baseline run (the previous one by default)."""

    previous_run_id: str | None = None
    """The baseline run."""
    current_run_id: str | None = None
    confidence: float = DEFAULT_CONFIDENCE
    resamples: int = DEFAULT_RESAMPLES
    """Bootstrap resamples per interval."""
    seed: int = DEFAULT_SEED
    """The bootstrap's seed: the same runs and seed give the same intervals."""
    pairs: int
    """Task runs (task, seed, epoch) in both runs and counted in both: what the tests use."""
    only_current: int = 0
    """Task runs of this run the baseline does not have (a task added, a benchmark of another version)."""
    only_previous: int = 0
    unscored: int = 0
    """Task runs in both runs left out because one of the two is UNSCORED."""
    tasks_shared: int = 0
    """Tasks ``(task_id, seed_index)`` both runs ran."""
    tasks_current: int = 0
    tasks_previous: int = 0
    setup: SetupComparison
    """Whether the two runs were produced the same way, and every difference when not."""
    overall: PairedRow | None = None
    """All paired task runs; ``None`` when the runs share none."""
    by_tag: list[PairedRow] = Field(default_factory=list)
    by_axis: list[PairedRow] = Field(default_factory=list)
    by_task: list[PairedRow] = Field(default_factory=list)

    @property
    def rows(self) -> list[PairedRow]:
        return [*([self.overall] if self.overall else []), *self.by_tag, *self.by_axis, *self.by_task]

    @property
    def regressed(self) -> bool:
        """The overall row is worse: what ``--fail-on-regression`` fails on."""
        return self.overall is not None and self.overall.verdict == "worse"

    @property
    def regressions(self) -> list[str]:
        """Every row marked worse, one sentence each (the overall row first)."""
        return [row.sentence() for row in self.rows if row.verdict == "worse"]

    @property
    def improvements(self) -> list[str]:
        return [row.sentence() for row in self.rows if row.verdict == "better"]

    @property
    def has_regressions(self) -> bool:
        return bool(self.regressions)

    def of_verdict(self, verdict: Verdict, kind: RowKind = "task") -> list[PairedRow]:
        return [row for row in self.rows if row.kind == kind and row.verdict == verdict]

    def markdown(self) -> str:
        """The "Compared with" section of the summary artifact (and of ``prefect-agentenv compare``)."""
        return comparison_markdown(self)


class _Pair(NamedTuple):
    previous: TaskResult
    current: TaskResult
    previous_axes: dict[str, float]
    current_axes: dict[str, float]


class _Test(NamedTuple):
    """How each row is tested: the level and the bootstrap's settings."""

    confidence: float
    resamples: int
    seed: int

    @property
    def alpha(self) -> float:
        return 1 - self.confidence


def compare(current: Sequence[TaskResult], previous: Sequence[TaskResult], *,
            confidence: float = DEFAULT_CONFIDENCE, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
            current_run_id: str | None = None, previous_run_id: str | None = None) -> Comparison:
    """Compare a run's results with a baseline run's, pair by pair (see the module docstring).

    Args:
        current: the run's results, in the order appended (the last result of a key wins).
        previous: the baseline run's.
        confidence: the level of every interval and verdict.
        resamples: bootstrap resamples per interval.
        seed: the bootstrap's seed.

    Raises:
        ValueError: ``confidence`` is not in (0, 1) or ``resamples`` is below 1.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence={confidence} must be in (0, 1)")
    if resamples < 1:
        raise ValueError(f"resamples={resamples} must be at least 1")
    now, before = latest_per_run_key(current), latest_per_run_key(previous)
    now_by_key, before_by_key = {r.run_key: r for r in now}, {r.run_key: r for r in before}
    shared = sorted(now_by_key.keys() & before_by_key.keys(), key=RunKey.sort_key)
    pairs = _pairs(shared, now, before)
    test = _Test(confidence, resamples, seed)
    now_tasks, before_tasks = {r.task_key for r in now}, {r.task_key for r in before}
    return Comparison(
        previous_run_id=previous_run_id, current_run_id=current_run_id, confidence=confidence,
        resamples=resamples, seed=seed, pairs=len(pairs),
        only_current=len(now_by_key.keys() - before_by_key.keys()),
        only_previous=len(before_by_key.keys() - now_by_key.keys()), unscored=len(shared) - len(pairs),
        tasks_shared=len(now_tasks & before_tasks), tasks_current=len(now_tasks), tasks_previous=len(before_tasks),
        setup=compare_setups(previous, current),
        overall=_row("overall", "all", pairs, test) if pairs else None,
        by_tag=[_row("tag", tag, group, test) for tag, group in sorted(_by_tag(pairs).items())],
        by_axis=[_axis_row(axis, group, test) for axis, group in sorted(_by_axis(pairs).items())],
        by_task=[_row("task", task, group, test, seed_index=seed_index)
                 for (task, seed_index), group in sorted(_by_task(pairs).items())],
    )


def _pairs(shared: Sequence[RunKey], now: Sequence[TaskResult], before: Sequence[TaskResult]) -> list[_Pair]:
    """The shared keys counted in both runs, with each side's axis scores (a task's axes are
    those either run scored: a run that errored counts 0 on them even if only the other run shows them)."""
    axes = task_axes([*now, *before])
    now_axes = {now[i].run_key: v for i, v in run_axis_values(now, axes).items()}
    before_axes = {before[i].run_key: v for i, v in run_axis_values(before, axes).items()}
    now_by_key, before_by_key = {r.run_key: r for r in now}, {r.run_key: r for r in before}
    return [_Pair(before_by_key[key], now_by_key[key], before_axes.get(key, {}), now_axes.get(key, {}))
            for key in shared if before_by_key[key].counted and now_by_key[key].counted]


def _by_tag(pairs: Sequence[_Pair]) -> dict[str, list[_Pair]]:
    grouped: dict[str, list[_Pair]] = defaultdict(list)
    for pair in pairs:
        for tag in dict.fromkeys([*pair.previous.tags, *pair.current.tags]):
            grouped[tag].append(pair)
    return grouped


def _by_task(pairs: Sequence[_Pair]) -> dict[tuple[str, int], list[_Pair]]:
    grouped: dict[tuple[str, int], list[_Pair]] = defaultdict(list)
    for pair in pairs:
        grouped[pair.current.task_key].append(pair)
    return grouped


def _by_axis(pairs: Sequence[_Pair]) -> dict[str, list[tuple[float, float]]]:
    grouped: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for pair in pairs:
        for axis in pair.previous_axes.keys() & pair.current_axes.keys():
            grouped[axis].append((pair.previous_axes[axis], pair.current_axes[axis]))
    return grouped


def _row(kind: RowKind, name: str, pairs: Sequence[_Pair], test: _Test, *, seed_index: int | None = None) -> PairedRow:
    label = f"{kind}:{name}:{seed_index}"
    pass_fail = _pass_fail([(p.previous.passed, p.current.passed) for p in pairs], test, label)
    score = _score([(p.previous.counted_score, p.current.counted_score) for p in pairs], test, label)
    return _decided(PairedRow(kind=kind, name=name, seed_index=seed_index, pairs=len(pairs), pass_fail=pass_fail,
                              score=score, verdict=_combined(pass_fail.verdict, score.verdict)), test)


def _axis_row(axis: str, values: Sequence[tuple[float, float]], test: _Test) -> PairedRow:
    score = _score(values, test, f"axis:{axis}")
    return _decided(PairedRow(kind="axis", name=axis, pairs=len(values), score=score, verdict=score.verdict), test)


def _decided(row: PairedRow, test: _Test) -> PairedRow:
    """The row with its minimum of pairs, its tests' notes and the reason for its verdict."""
    fewest = fewest_decisive_pairs(test.confidence)
    if row.pairs < fewest:
        # The exact tests cannot reach the level, so both verdicts are already tied; the intervals stay
        # in the record but no row shows them.
        reason = too_few_reason(row.pairs, fewest, test.confidence, scores_only=row.pass_fail is None)
        notes = {"note": TOO_FEW}
        return row.model_copy(update={
            "min_pairs": fewest, "too_few_pairs": True, "reason": reason,
            "pass_fail": row.pass_fail.model_copy(update=notes) if row.pass_fail else None,
            "score": row.score.model_copy(update=notes) if row.score else None})
    pass_fail = row.pass_fail.model_copy(update={"note": pass_fail_note(row.pass_fail)}) if row.pass_fail else None
    score = row.score.model_copy(update={"note": score_note(row.score)}) if row.score else None
    return row.model_copy(update={"min_pairs": fewest, "pass_fail": pass_fail, "score": score,
                                  "reason": row_reason(row.verdict, pass_fail, score, test.confidence)})


def _pass_fail(outcomes: Sequence[tuple[bool, bool]], test: _Test, label: str) -> PassFailTest:
    lost = sum(1 for was, now in outcomes if was and not now)
    gained = sum(1 for was, now in outcomes if now and not was)
    p, method = mcnemar(lost, gained)
    verdict: Verdict = "tied" if p >= test.alpha or lost == gained else ("worse" if lost > gained else "better")
    differences = [float(now) - float(was) for was, now in outcomes]
    return PassFailTest(
        previous_rate=fmean(float(was) for was, _ in outcomes), current_rate=fmean(float(now) for _, now in outcomes),
        difference=fmean(differences), lost=lost, gained=gained, p_value=p, method=method, verdict=verdict,
        interval=paired_bootstrap(differences, test.confidence, resamples=test.resamples,
                                  seed=f"{test.seed}:{label}:pass"))


def _score(values: Sequence[tuple[float, float]], test: _Test, label: str) -> ScoreTest:
    differences = [now - was for was, now in values]
    interval = paired_bootstrap(differences, test.confidence, resamples=test.resamples,
                                seed=f"{test.seed}:{label}:score")
    p = sign_test(differences)
    verdict: Verdict = "tied"
    if interval is not None and p < test.alpha:
        verdict = "worse" if interval.high < 0 else "better" if interval.low > 0 else "tied"
    return ScoreTest(previous_mean=fmean(was for was, _ in values), current_mean=fmean(now for _, now in values),
                     difference=fmean(differences), interval=interval, p_value=p, verdict=verdict)


def _combined(*verdicts: Verdict) -> Verdict:
    if "worse" in verdicts and "better" not in verdicts:
        return "worse"
    if "better" in verdicts and "worse" not in verdicts:
        return "better"
    return "tied"
