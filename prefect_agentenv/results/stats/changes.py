"""What changed task by task between two runs, without a test: the HTML report's trend marks.

A task that passed every epoch and does not now, or whose score moved by more than a threshold,
is listed. It is a description of the two runs, not an inference: with one epoch per task, a
single flaky task run is listed. Whether a run is *worse* is the paired comparison's question
(:mod:`prefect_agentenv.results.comparison.compare`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Literal, NamedTuple

from pydantic import Field

from prefect_agentenv.results.rows import StatsModel, TaskKey, TaskResult, latest_per_run_key
from prefect_agentenv.results.stats.intervals import DEFAULT_CONFIDENCE, Interval
from prefect_agentenv.results.stats.summary import breakdown, summarize
from prefect_agentenv.results.stats.summary_markdown import percentage, task_label

ChangeKind = Literal["improved", "regressed", "unchanged", "new", "missing"]


class TaskChange(StatsModel):
    """How one task ``(task_id, seed_index)`` fared against the previous run."""

    task_id: str
    seed_index: int = 0
    kind: ChangeKind
    previous_score: float | None = None
    """Mean counted score over the task's epochs in the previous run."""
    current_score: float | None = None
    previous_pass_rate: float | None = None
    current_pass_rate: float | None = None
    reasons: list[str] = Field(default_factory=list)
    """Why the task is flagged as regressed or counted as improved."""


class TaskChanges(StatsModel):
    """What changed task by task between two runs; ``regressions`` lists the changes for the worse."""

    threshold: float
    """Score change a task needs to count as improved or regressed."""
    previous_run_id: str | None = None
    current_run_id: str | None = None
    current_mean: float | None = None
    previous_mean: float | None = None
    previous_mean_ci: Interval | None = None
    mean_score_delta: float | None = None
    current_pass_rate: float | None = None
    previous_pass_rate: float | None = None
    pass_rate_delta: float | None = None
    mean_dropped_beyond_ci: bool = False
    """The current mean is below the previous run's confidence interval."""
    changes: list[TaskChange] = Field(default_factory=list)

    def of_kind(self, kind: ChangeKind) -> list[TaskChange]:
        return [change for change in self.changes if change.kind == kind]

    @property
    def regressions(self) -> list[str]:
        """Every flagged regression, one sentence each (empty when there is none)."""
        flagged = [f"{task_label(c.task_id, c.seed_index)}: {'; '.join(c.reasons)}"
                   for c in self.of_kind("regressed")]
        if self.mean_dropped_beyond_ci and self.previous_mean_ci and self.current_mean is not None:
            flagged.insert(0, f"mean score {self.current_mean:.3f} is below the previous run's "
                              f"{percentage(self.previous_mean_ci.confidence)} interval "
                              f"[{self.previous_mean_ci.low:.3f}, {self.previous_mean_ci.high:.3f}]")
        return flagged

    @property
    def has_regressions(self) -> bool:
        return bool(self.regressions)


class _TaskStats(NamedTuple):
    score: float | None
    pass_rate: float | None
    unscored_only: bool


def _task_stats(results: Iterable[TaskResult]) -> dict[TaskKey, _TaskStats]:
    grouped: dict[TaskKey, list[TaskResult]] = defaultdict(list)
    for run in latest_per_run_key(results):
        grouped[run.task_key].append(run)
    stats = {}
    for key, runs in grouped.items():
        b = breakdown(runs)
        stats[key] = _TaskStats(b.mean, b.pass_rate, b.n == 0)
    return stats


def task_changes(current: Sequence[TaskResult], previous: Sequence[TaskResult], *, threshold: float = 0.05,
                 current_run_id: str | None = None, previous_run_id: str | None = None,
                 confidence: float = DEFAULT_CONFIDENCE) -> TaskChanges:
    """What changed task by task between a benchmark run's results and an earlier run's.

    Per task ``(task_id, seed_index)``, with its mean score and pass rate over its epochs:

    * **regressed** when it passed every counted epoch before and does not now, when its score
      dropped by more than ``threshold``, or when it was scored before and is UNSCORED now
      (leaving the denominator would hide a drop);
    * **improved** when its score rose by more than ``threshold`` or it passes every epoch now
      and did not before;
    * **new** / **missing** when only one of the runs has it; otherwise **unchanged**.

    The run as a whole is flagged when the current mean score falls below the previous run's
    confidence interval of the mean (``mean_dropped_beyond_ci``; when that interval has zero
    width the drop must also exceed ``threshold``).
    """
    now, before = summarize(current, confidence=confidence), summarize(previous, confidence=confidence)
    now_tasks, before_tasks = _task_stats(current), _task_stats(previous)
    changes = [_task_change(key, now_tasks.get(key), before_tasks.get(key), threshold)
               for key in sorted(now_tasks.keys() | before_tasks.keys())]
    ci = before.mean_score_ci
    return TaskChanges(
        threshold=threshold,
        previous_run_id=previous_run_id,
        current_run_id=current_run_id,
        current_mean=now.mean_score,
        previous_mean=before.mean_score,
        previous_mean_ci=ci,
        mean_score_delta=_difference(now.mean_score, before.mean_score),
        current_pass_rate=now.pass_rate,
        previous_pass_rate=before.pass_rate,
        pass_rate_delta=_difference(now.pass_rate, before.pass_rate),
        mean_dropped_beyond_ci=_below_interval(now.mean_score, before.mean_score, ci, threshold),
        changes=changes,
    )


def _task_change(key: TaskKey, now: _TaskStats | None, before: _TaskStats | None, threshold: float) -> TaskChange:
    change = TaskChange(task_id=key[0], seed_index=key[1], kind="unchanged",
                        current_score=now.score if now else None, previous_score=before.score if before else None,
                        current_pass_rate=now.pass_rate if now else None,
                        previous_pass_rate=before.pass_rate if before else None)
    if before is None or now is None:
        change.kind = "new" if before is None else "missing"
        return change
    worse, better = _regression_reasons(now, before, threshold), _improvement_reasons(now, before, threshold)
    if worse:
        change.kind, change.reasons = "regressed", worse
    elif better:
        change.kind, change.reasons = "improved", better
    return change


def _regression_reasons(now: _TaskStats, before: _TaskStats, threshold: float) -> list[str]:
    reasons = []
    if before.pass_rate == 1.0 and now.pass_rate != 1.0:
        reasons.append("passed before, does not now" if now.pass_rate is not None else "passed before, unscored now")
    elif now.unscored_only and not before.unscored_only:
        reasons.append("scored before, unscored now")
    if now.score is not None and before.score is not None and before.score - now.score > threshold:
        reasons.append(f"score dropped {before.score:.3f} → {now.score:.3f}")
    return reasons


def _improvement_reasons(now: _TaskStats, before: _TaskStats, threshold: float) -> list[str]:
    reasons = []
    if now.pass_rate == 1.0 and before.pass_rate != 1.0:
        reasons.append("passes now, did not before")
    if now.score is not None and before.score is not None and now.score - before.score > threshold:
        reasons.append(f"score rose {before.score:.3f} → {now.score:.3f}")
    return reasons


def _below_interval(now: float | None, before: float | None, ci: Interval | None, threshold: float) -> bool:
    """Whether the mean fell below the previous interval.

    A zero-width interval (every previous score equal) would flag any drop at all, however
    small, so then the drop must also exceed ``threshold``.
    """
    if now is None or before is None or ci is None or now >= ci.low:
        return False
    return ci.high > ci.low or before - now > threshold


def _difference(now: float | None, before: float | None) -> float | None:
    return None if now is None or before is None else now - before
