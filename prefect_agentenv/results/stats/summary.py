"""A benchmark run's summary: outcome counts, mean score and pass rate with their intervals,
pass@k and pass^k, and breakdowns by tag and by axis.

**A "task"** in per-task statistics (pass@k, comparisons) is a ``(task_id, seed_index)`` pair:
a seed can change the instruction or the data, so two seeds are two problems; epochs are
repeated attempts at the same problem.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from statistics import fmean

from pydantic import Field

from prefect_agentenv.grading.outcome import Outcome
from prefect_agentenv.results.judges.judge_trust import JudgeTrustSummary, trust_summary
from prefect_agentenv.results.rows import (
    DENOMINATOR_POLICY,
    EXCLUSION_POLICY,
    StatsModel,
    TaskKey,
    TaskResult,
    latest_per_run_key,
)
from prefect_agentenv.results.stats.intervals import (
    DEFAULT_CONFIDENCE,
    Interval,
    mean_interval,
    pass_at_k,
    pass_hat_k,
    wilson_interval,
)
from prefect_agentenv.results.stats.run_setup import RunSetup, run_setup
from prefect_agentenv.usage import TokenUsage, total_usage


class OutcomeCounts(StatsModel):
    """How many runs ended with each outcome."""

    passed: int = 0
    below_one: int = 0
    unscored: int = 0
    failed: int = 0
    timed_out: int = 0
    excluded: int = 0
    """FAILED runs left out of the denominator (also counted in ``failed``): infrastructure
    failures still failed after their retries, under ``infrastructure.exclude_from_mean``."""
    not_run: int = 0
    """UNSCORED runs that never started because the run's budget was spent (also counted in ``unscored``)."""

    @property
    def total(self) -> int:
        return self.passed + self.below_one + self.unscored + self.failed + self.timed_out

    @property
    def denominator(self) -> int:
        """Runs counted in the mean score and the pass rate: every outcome but UNSCORED, less the
        excluded infrastructure failures."""
        return self.total - self.unscored - self.excluded

    @property
    def errored(self) -> int:
        """Runs that did not finish normally (FAILED, TIMED_OUT); they count as score 0."""
        return self.failed + self.timed_out

    @property
    def failed_to_pass(self) -> int:
        """Runs that finished and were graded below 1 (BELOW_ONE)."""
        return self.below_one

    def add(self, outcome: Outcome) -> None:
        name = outcome.value.lower()
        setattr(self, name, getattr(self, name) + 1)


class Breakdown(StatsModel):
    """Mean score and pass rate of a subset of runs (one tag, one axis), by the same policy."""

    n: int
    """Runs counted (UNSCORED left out)."""
    mean: float | None = None
    pass_rate: float | None = None
    """For tags: the share of counted runs that passed; not defined for axes."""
    unscored: int = 0


class FailureSummary(StatsModel):
    """Whose failures the runs that did not pass were (docs/scoring.md, "Agent or infrastructure")."""

    agent: int = 0
    """Runs that did not pass for the agent: a wrong answer, an agent error, a timeout."""
    infrastructure: int = 0
    """Runs whose last attempt failed for infrastructure (after its retries)."""
    infrastructure_rate: float | None = None
    """``infrastructure`` / every run; what ``infrastructure.max_error_rate`` is checked against."""
    retried: int = 0
    """Runs attempted more than once because an attempt failed for infrastructure."""
    recovered: int = 0
    """Retried runs whose last attempt did not fail for infrastructure."""
    agent_reasons: dict[str, int] = Field(default_factory=dict)
    """Reason → how many runs it ended, for the agent's failures (``below_one``, ``agent_error``…)."""
    infrastructure_reasons: dict[str, int] = Field(default_factory=dict)
    """Reason → how many runs it ended, for infrastructure failures (``deploy_failed``…)."""


class Headline(StatsModel):
    """The few numbers a runs index keeps of each run, for listing and comparing."""

    total: int
    denominator: int
    passed: int
    unscored: int
    errored: int
    mean_score: float | None = None
    pass_rate: float | None = None
    infrastructure_failed: int = 0
    """Runs that failed for infrastructure after their retries."""


class BenchmarkSummary(StatsModel):
    """Aggregate statistics of one benchmark run (see the module docstring for the policy)."""

    counts: OutcomeCounts
    tasks: int
    """Distinct ``(task_id, seed_index)`` problems."""
    epochs: int
    """Distinct epochs among the results."""
    mean_score: float | None = None
    """Mean of the counted scores over the denominator (errored runs as 0)."""
    mean_score_ci: Interval | None = None
    """Student-t interval of the mean score (needs two counted runs)."""
    pass_rate: float | None = None
    """PASSED runs / denominator."""
    pass_rate_ci: Interval | None = None
    """Wilson interval of the pass rate."""
    by_tag: dict[str, Breakdown] = Field(default_factory=dict)
    by_axis: dict[str, Breakdown] = Field(default_factory=dict)
    k: int | None = None
    """The k of pass@k and pass^k."""
    pass_at_k: float | None = None
    """Mean over tasks of the unbiased pass@k estimate."""
    pass_hat_k: float | None = None
    """Mean over tasks of pass^k (all k attempts pass)."""
    pass_k_tasks: int = 0
    """Tasks in the pass@k average: those with at least k counted runs."""
    usage: TokenUsage | None = None
    """Tokens and cost over every run summarized, when any reported them."""
    denominator_policy: str = DENOMINATOR_POLICY
    failures: FailureSummary = Field(default_factory=FailureSummary)
    """Agent and infrastructure failures, retries and the infrastructure failure rate."""
    setup: RunSetup | None = None
    """What produced the results (agents, models, judges, overrides, versions, task documents);
    ``None`` when they were recorded before results carried it."""
    judges: JudgeTrustSummary | None = Field(default=None, exclude_if=lambda value: value is None)
    """The rubric scores by their judge setups' calibration; absent when no run has a judged rubric."""

    @property
    def headline(self) -> Headline:
        return Headline(total=self.counts.total, denominator=self.counts.denominator, passed=self.counts.passed,
                        unscored=self.counts.unscored, errored=self.counts.errored, mean_score=self.mean_score,
                        pass_rate=self.pass_rate, infrastructure_failed=self.failures.infrastructure)


def summarize(results: Iterable[TaskResult], *, k: int | None = None,
              confidence: float = DEFAULT_CONFIDENCE) -> BenchmarkSummary:
    """Summarize a benchmark run's results (the last result of each run key).

    * ``mean_score = Σ counted_score / denominator`` where the denominator is every run but
      UNSCORED ones and errored runs count 0; its interval is :func:`mean_interval` (Student t).
    * ``pass_rate = PASSED / denominator`` with the :func:`wilson_interval`.
    * pass@k and pass^k: per task ``(task_id, seed_index)``, ``n`` = its counted runs (one per
      epoch), ``c`` = its PASSED runs; :func:`pass_at_k` and :func:`pass_hat_k` averaged over
      the tasks with ``n ≥ k`` (the estimators are undefined below that; ``pass_k_tasks`` says
      how many were averaged). ``k`` defaults to the number of epochs among the results.

    Args:
        results: the run's results, in the order they were appended.
        k: attempts for pass@k / pass^k.
        confidence: level of both intervals.

    Raises:
        ValueError: ``k`` is below 1.
    """
    if k is not None and k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    runs = latest_per_run_key(results)
    counts = OutcomeCounts()
    for run in runs:
        counts.add(run.outcome)
        counts.excluded += run.excluded
        counts.not_run += run.not_run is not None
    scores = [run.counted_score for run in runs if run.counted]
    epochs = len({run.epoch for run in runs})
    k_used = k if k is not None else (epochs or None)
    pass_k = _pass_k(runs, k_used) if k_used else None
    return BenchmarkSummary(
        counts=counts,
        tasks=len({run.task_key for run in runs}),
        epochs=epochs,
        mean_score=fmean(scores) if scores else None,
        mean_score_ci=mean_interval(scores, confidence),
        pass_rate=counts.passed / counts.denominator if counts.denominator else None,
        pass_rate_ci=wilson_interval(counts.passed, counts.denominator, confidence),
        by_tag=_by_tag(runs),
        by_axis=_by_axis(runs),
        k=k_used,
        pass_at_k=pass_k[0] if pass_k else None,
        pass_hat_k=pass_k[1] if pass_k else None,
        pass_k_tasks=pass_k[2] if pass_k else 0,
        denominator_policy=DENOMINATOR_POLICY + (EXCLUSION_POLICY if counts.excluded else ""),
        failures=failure_summary(runs),
        setup=run_setup(runs),
        usage=total_usage(run.usage for run in runs),
        judges=trust_summary(runs),
    )


def failure_summary(runs: Sequence[TaskResult]) -> FailureSummary:
    """Agent and infrastructure failures of the runs (one per run key), their reasons and retries."""
    reasons: dict[str, dict[str, int]] = {"agent": defaultdict(int), "infrastructure": defaultdict(int)}
    for run in runs:
        if run.failure is not None:
            reasons[run.failure.kind][run.failure.reason] += 1
    infrastructure = sum(reasons["infrastructure"].values())
    retried = [run for run in runs if run.attempts > 1]
    return FailureSummary(
        agent=sum(reasons["agent"].values()),
        infrastructure=infrastructure,
        infrastructure_rate=infrastructure / len(runs) if runs else None,
        retried=len(retried),
        recovered=sum(not run.infrastructure_failed for run in retried),
        agent_reasons=dict(sorted(reasons["agent"].items())),
        infrastructure_reasons=dict(sorted(reasons["infrastructure"].items())),
    )


def _pass_k(runs: Sequence[TaskResult], k: int) -> tuple[float, float, int] | None:
    """Mean pass@k, mean pass^k and the number of tasks averaged (``None`` when none has k runs)."""
    tallies: dict[TaskKey, list[int]] = defaultdict(lambda: [0, 0])
    for run in runs:
        if run.counted:
            tally = tallies[run.task_key]
            tally[0] += 1
            tally[1] += run.passed
    eligible = [(n, c) for n, c in tallies.values() if n >= k]
    if not eligible:
        return None
    return (fmean(pass_at_k(n, c, k) for n, c in eligible),
            fmean(pass_hat_k(n, c, k) for n, c in eligible), len(eligible))


def breakdown(runs: Sequence[TaskResult]) -> Breakdown:
    """Mean counted score and pass rate of some runs (a tag's, a task's), by the denominator policy."""
    counted = [run for run in runs if run.counted]
    return Breakdown(
        n=len(counted),
        mean=fmean(run.counted_score for run in counted) if counted else None,
        pass_rate=sum(run.passed for run in counted) / len(counted) if counted else None,
        unscored=sum(run.outcome is Outcome.UNSCORED for run in runs),
    )


def _by_tag(runs: Sequence[TaskResult]) -> dict[str, Breakdown]:
    """Per tag, the runs of the tasks carrying it, by the same denominator policy."""
    tagged: dict[str, list[TaskResult]] = defaultdict(list)
    for run in runs:
        for tag in dict.fromkeys(run.tags):
            tagged[tag].append(run)
    return {tag: breakdown(tagged[tag]) for tag in sorted(tagged)}


def _by_axis(runs: Sequence[TaskResult]) -> dict[str, Breakdown]:
    """Per axis, the mean axis score over the runs that scored it, errored runs counting 0."""
    return {axis: Breakdown(n=len(v), mean=fmean(v)) for axis, v in sorted(axis_values(runs).items())}


def axis_values(runs: Iterable[TaskResult]) -> dict[str, list[float]]:
    """Per axis, the score of every counted run, errored runs counting 0.

    An errored run rarely reaches its verifiers, so it counts 0 on every axis that any run of
    the same ``task_id`` scored (unless the infrastructure policy excluded it): a crash must not
    lift an axis mean by leaving the average. So does a run with an errored verifier whose axes are
    unknown (``axes_unknown_errors``), on the task's axes it did not score.
    """
    values: dict[str, list[float]] = defaultdict(list)
    for scores in run_axis_values(runs).values():
        for axis, score in scores.items():
            values[axis].append(score)
    return values


def task_axes(runs: Iterable[TaskResult]) -> dict[str, set[str]]:
    """Per ``task_id``, every axis any of its runs scored."""
    axes: dict[str, set[str]] = defaultdict(set)
    for run in runs:
        axes[run.task_id].update(run.axis_scores)
    return axes


def run_axis_values(runs: Iterable[TaskResult],
                    axes: dict[str, set[str]] | None = None) -> dict[int, dict[str, float]]:
    """Per counted run (by its position in ``runs``), its score on each axis by the rule of
    :func:`axis_values`; ``axes`` are the axes of each task (default: those these runs scored),
    so a comparison can count a run 0 on an axis only the other run's results reveal."""
    runs = list(runs)
    axes = task_axes(runs) if axes is None else axes
    values: dict[int, dict[str, float]] = {}
    for index, run in enumerate(runs):
        if run.excluded:  # left out of every mean by the infrastructure policy
            continue
        if run.errored:
            values[index] = dict.fromkeys(sorted(axes.get(run.task_id, ())), 0.0)
        elif run.counted:
            scores = dict(run.axis_scores)
            if run.axes_unknown_errors:
                scores |= dict.fromkeys(sorted(axes.get(run.task_id, set()) - run.axis_scores.keys()), 0.0)
            values[index] = scores
    return values
