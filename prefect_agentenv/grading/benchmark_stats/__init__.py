"""Benchmark results and their statistics: summaries, confidence intervals, pass@k, comparisons.

Everything here is pure: it takes :class:`TaskResult` rows (one per task run of a benchmark)
and returns models and markdown. Storing the rows is :mod:`prefect_agentenv.flows.reports.results`.
One module per concern: ``results`` (the rows, run keys, the denominator policy, axis scores),
``intervals`` (pass@k, pass^k, Student t and Wilson intervals), ``summary`` (a run's summary),
``compare`` (a run against the previous one) and ``markdown`` (the summary artifact).

**Denominator policy** (docs/scoring.md): ``PASSED``, ``BELOW_ONE``, ``FAILED`` and
``TIMED_OUT`` runs count in the mean score and the pass rate, FAILED and TIMED_OUT with score 0
(a crash or a timeout must not make a run look better); ``UNSCORED`` runs are counted
separately and left out of both, since there was nothing to grade.

**Run keys.** A benchmark runs each task with each seed for each epoch; ``(task_id,
seed_index, epoch)`` identifies one run. A resumed benchmark may hold several results for one
key (the errored attempt, then the rerun): the last one wins everywhere in this package.

**A "task"** in per-task statistics (pass@k, comparisons) is a ``(task_id, seed_index)`` pair:
a seed can change the instruction or the data, so two seeds are two problems; epochs are
repeated attempts at the same problem.
"""

from prefect_agentenv.grading.benchmark_stats.compare import ChangeKind, Comparison, TaskChange, compare
from prefect_agentenv.grading.benchmark_stats.intervals import (
    DEFAULT_CONFIDENCE,
    Interval,
    mean_interval,
    pass_at_k,
    pass_hat_k,
    student_t_quantile,
    wilson_interval,
)
from prefect_agentenv.grading.benchmark_stats.markdown import summary_markdown
from prefect_agentenv.grading.benchmark_stats.results import (
    DENOMINATOR_OUTCOMES,
    DENOMINATOR_POLICY,
    ERRORED_OUTCOMES,
    FailureCause,
    FailureKind,
    RetriedAttempt,
    PublishedVersion,
    RunKey,
    RunStatus,
    TaskKey,
    TaskResult,
    TaskSnapshot,
    axes_unknown_errors,
    axis_scores,
)
from prefect_agentenv.grading.benchmark_stats.summary import (
    BenchmarkSummary,
    Breakdown,
    Headline,
    FailureSummary,
    OutcomeCounts,
    axis_values,
    latest_per_run_key,
    summarize,
)

__all__ = [
    "axis_values",
    "DEFAULT_CONFIDENCE",
    "DENOMINATOR_OUTCOMES",
    "DENOMINATOR_POLICY",
    "ERRORED_OUTCOMES",
    "BenchmarkSummary",
    "FailureCause",
    "FailureKind",
    "FailureSummary",
    "RetriedAttempt",
    "Breakdown",
    "ChangeKind",
    "Comparison",
    "Headline",
    "Interval",
    "OutcomeCounts",
    "PublishedVersion",
    "RunKey",
    "RunStatus",
    "TaskChange",
    "TaskKey",
    "TaskResult",
    "TaskSnapshot",
    "axes_unknown_errors",
    "axis_scores",
    "compare",
    "latest_per_run_key",
    "mean_interval",
    "pass_at_k",
    "pass_hat_k",
    "student_t_quantile",
    "summarize",
    "summary_markdown",
    "wilson_interval",
]
