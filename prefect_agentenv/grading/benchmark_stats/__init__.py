"""Benchmark results and their statistics: summaries, confidence intervals, pass@k, comparisons.

Everything here is pure: it takes :class:`TaskResult` rows (one per task run of a benchmark)
and returns models and markdown. Storing the rows is :mod:`prefect_agentenv.flows.reports.results`.
One module per concern: ``results`` (the rows, run keys, the denominator policy, axis scores,
the setup fingerprint a row carries), ``intervals`` (pass@k, pass^k, Student t and Wilson
intervals), ``summary`` (a run's summary), ``setup`` (a run's merged setup and how two differ),
``paired`` (McNemar, the sign test, the paired bootstrap), ``compare`` (a run against a baseline,
pair by pair), ``sweep`` (a run over several cells: each cell's summary, cells compared pair by
pair), ``gate`` (a pipeline's minimum score and no-regression check), ``changes`` (what
changed task by task, untested: the HTML report's trend), ``markdown`` and
``comparison_markdown`` (the summary artifact).

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

from prefect_agentenv.grading.benchmark_stats.changes import ChangeKind, TaskChange, TaskChanges, task_changes
from prefect_agentenv.grading.benchmark_stats.compare import (
    Comparison,
    PairedRow,
    PassFailTest,
    ScoreTest,
    Verdict,
    compare,
)
from prefect_agentenv.grading.benchmark_stats.gate import GATE_EXIT_CODE, GateResult, check_gate
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
from prefect_agentenv.grading.benchmark_stats.paired import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    binomial_two_sided,
    mcnemar,
    paired_bootstrap,
    sign_test,
)
from prefect_agentenv.grading.benchmark_stats.results import (
    DENOMINATOR_OUTCOMES,
    DENOMINATOR_POLICY,
    ERRORED_OUTCOMES,
    FailureCause,
    FailureKind,
    RetriedAttempt,
    PublishedVersion,
    AgentSetup,
    RunKey,
    RunStatus,
    SetupFingerprint,
    TaskKey,
    TaskResult,
    TaskSnapshot,
    axes_unknown_errors,
    axis_scores,
    cell_suffix,
    latest_per_run_key,
)
from prefect_agentenv.grading.benchmark_stats.setup import RunSetup, SetupComparison, SetupDifference, compare_setups, run_setup
from prefect_agentenv.grading.benchmark_stats.sweep import (
    CellPair,
    CellSummary,
    SweepSummary,
    results_of_cell,
    summarize_sweep,
    sweep_gate,
    sweep_markdown,
)
from prefect_agentenv.grading.benchmark_stats.summary import (
    BenchmarkSummary,
    Breakdown,
    Headline,
    FailureSummary,
    OutcomeCounts,
    axis_values,
    summarize,
)

__all__ = [
    "AgentSetup",
    "BenchmarkSummary",
    "FailureCause",
    "FailureKind",
    "FailureSummary",
    "RetriedAttempt",
    "Breakdown",
    "CellPair",
    "CellSummary",
    "ChangeKind",
    "Comparison",
    "DEFAULT_CONFIDENCE",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "DENOMINATOR_OUTCOMES",
    "DENOMINATOR_POLICY",
    "ERRORED_OUTCOMES",
    "GATE_EXIT_CODE",
    "GateResult",
    "Headline",
    "Interval",
    "OutcomeCounts",
    "PublishedVersion",
    "PairedRow",
    "PassFailTest",
    "RunKey",
    "RunSetup",
    "RunStatus",
    "ScoreTest",
    "SetupComparison",
    "SetupDifference",
    "SetupFingerprint",
    "SweepSummary",
    "TaskChange",
    "TaskChanges",
    "TaskKey",
    "TaskResult",
    "TaskSnapshot",
    "Verdict",
    "axes_unknown_errors",
    "axis_scores",
    "axis_values",
    "binomial_two_sided",
    "cell_suffix",
    "check_gate",
    "compare",
    "compare_setups",
    "latest_per_run_key",
    "mcnemar",
    "mean_interval",
    "paired_bootstrap",
    "pass_at_k",
    "pass_hat_k",
    "results_of_cell",
    "run_setup",
    "sign_test",
    "student_t_quantile",
    "summarize",
    "summary_markdown",
    "summarize_sweep",
    "sweep_gate",
    "sweep_markdown",
    "task_changes",
    "wilson_interval",
]
