"""A benchmark run's results: task reports, the results store, and their statistics.

What a task run leaves: ``task_report`` (its report, a stable JSON contract) and ``task_results``
(its result row, made from the report or from a crash that left none).

Where results are kept: ``store`` (results, frozen task snapshots, the runs index),
``scoring_versions`` and ``scoring_store`` (a run's scoring versions: its own, then each rescore),
``run_lookup`` (a run named on the command line), ``baseline`` (the run compared with),
``fingerprint`` (what produced a result) and ``benchmark_result`` (what a benchmark run returns).

The statistics are pure: they take :class:`TaskResult` rows and return models and markdown, one
module per concern: ``rows`` (the rows, run keys, the denominator policy, axis scores, the setup
fingerprint a row carries), ``intervals`` (pass@k, pass^k, Student t and Wilson intervals),
``summary`` (a run's summary), ``setup`` (a run's merged setup and how two differ), ``paired``
(McNemar, the sign test, the paired bootstrap), ``comparison`` (a run against a baseline, pair by
pair), ``sweep_tables`` (a run over several cells: each cell's summary, cells compared pair by
pair) and ``sweep_runs`` (a sweep's cells against the baseline's), ``gate`` (a pipeline's minimum
score and no-regression check), ``changes`` (what changed task by task: the HTML report's trend),
``markdown`` and ``comparison_markdown`` (the summary artifact). This package's names load on
first use.

How far a judge can be trusted: ``labels`` (human labels of criteria, versioned in the store),
``label_sampling`` (which task runs a reviewer labels), ``agreement`` (agreement, Cohen's κ,
TPR/TNR), ``calibration`` and ``calibration_markdown`` (judges against the labels, per judge
setup) and ``judge_trust`` (a run's rubric scores by their setups' calibration, and the gate on it).

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

from __future__ import annotations

from typing import TYPE_CHECKING

from prefect_agentenv.lazy import lazy_names

if TYPE_CHECKING:  # what checkers and editors see; at run time each name loads on first use, so a
    # task run that imports the task report (``results.task_report``) never loads the statistics.
    from prefect_agentenv.results.changes import ChangeKind, TaskChange, TaskChanges, task_changes
    from prefect_agentenv.results.comparison import (
        Comparison,
        PairedRow,
        PassFailTest,
        ScoreTest,
        Verdict,
        compare,
    )
    from prefect_agentenv.results.gate import GATE_EXIT_CODE, GateResult, check_gate
    from prefect_agentenv.results.intervals import (
        DEFAULT_CONFIDENCE,
        Interval,
        mean_interval,
        pass_at_k,
        pass_hat_k,
        student_t_quantile,
        wilson_interval,
    )
    from prefect_agentenv.results.markdown import summary_markdown
    from prefect_agentenv.results.paired import (
        DEFAULT_RESAMPLES,
        DEFAULT_SEED,
        binomial_two_sided,
        mcnemar,
        paired_bootstrap,
        sign_test,
    )
    from prefect_agentenv.results.rows import (
        DENOMINATOR_OUTCOMES,
        DENOMINATOR_POLICY,
        ERRORED_OUTCOMES,
        AgentSetup,
        FailureCause,
        FailureKind,
        PublishedVersion,
        RetriedAttempt,
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
    from prefect_agentenv.results.setup import RunSetup, SetupComparison, SetupDifference, compare_setups, run_setup
    from prefect_agentenv.results.summary import (
        BenchmarkSummary,
        Breakdown,
        FailureSummary,
        Headline,
        OutcomeCounts,
        axis_values,
        summarize,
    )
    from prefect_agentenv.results.sweep_tables import (
        CellPair,
        CellSummary,
        SweepSummary,
        results_of_cell,
        summarize_sweep,
        sweep_gate,
        sweep_markdown,
    )

_LAZY = {
    "ChangeKind": "prefect_agentenv.results.changes",
    "TaskChange": "prefect_agentenv.results.changes",
    "TaskChanges": "prefect_agentenv.results.changes",
    "task_changes": "prefect_agentenv.results.changes",
    "Comparison": "prefect_agentenv.results.comparison",
    "PairedRow": "prefect_agentenv.results.comparison",
    "PassFailTest": "prefect_agentenv.results.comparison",
    "ScoreTest": "prefect_agentenv.results.comparison",
    "Verdict": "prefect_agentenv.results.comparison",
    "compare": "prefect_agentenv.results.comparison",
    "GATE_EXIT_CODE": "prefect_agentenv.results.gate",
    "GateResult": "prefect_agentenv.results.gate",
    "check_gate": "prefect_agentenv.results.gate",
    "DEFAULT_CONFIDENCE": "prefect_agentenv.results.intervals",
    "Interval": "prefect_agentenv.results.intervals",
    "mean_interval": "prefect_agentenv.results.intervals",
    "pass_at_k": "prefect_agentenv.results.intervals",
    "pass_hat_k": "prefect_agentenv.results.intervals",
    "student_t_quantile": "prefect_agentenv.results.intervals",
    "wilson_interval": "prefect_agentenv.results.intervals",
    "summary_markdown": "prefect_agentenv.results.markdown",
    "DEFAULT_RESAMPLES": "prefect_agentenv.results.paired",
    "DEFAULT_SEED": "prefect_agentenv.results.paired",
    "binomial_two_sided": "prefect_agentenv.results.paired",
    "mcnemar": "prefect_agentenv.results.paired",
    "paired_bootstrap": "prefect_agentenv.results.paired",
    "sign_test": "prefect_agentenv.results.paired",
    "DENOMINATOR_OUTCOMES": "prefect_agentenv.results.rows",
    "DENOMINATOR_POLICY": "prefect_agentenv.results.rows",
    "ERRORED_OUTCOMES": "prefect_agentenv.results.rows",
    "AgentSetup": "prefect_agentenv.results.rows",
    "FailureCause": "prefect_agentenv.results.rows",
    "FailureKind": "prefect_agentenv.results.rows",
    "PublishedVersion": "prefect_agentenv.results.rows",
    "RetriedAttempt": "prefect_agentenv.results.rows",
    "RunKey": "prefect_agentenv.results.rows",
    "RunStatus": "prefect_agentenv.results.rows",
    "SetupFingerprint": "prefect_agentenv.results.rows",
    "TaskKey": "prefect_agentenv.results.rows",
    "TaskResult": "prefect_agentenv.results.rows",
    "TaskSnapshot": "prefect_agentenv.results.rows",
    "axes_unknown_errors": "prefect_agentenv.results.rows",
    "axis_scores": "prefect_agentenv.results.rows",
    "cell_suffix": "prefect_agentenv.results.rows",
    "latest_per_run_key": "prefect_agentenv.results.rows",
    "RunSetup": "prefect_agentenv.results.setup",
    "SetupComparison": "prefect_agentenv.results.setup",
    "SetupDifference": "prefect_agentenv.results.setup",
    "compare_setups": "prefect_agentenv.results.setup",
    "run_setup": "prefect_agentenv.results.setup",
    "BenchmarkSummary": "prefect_agentenv.results.summary",
    "Breakdown": "prefect_agentenv.results.summary",
    "FailureSummary": "prefect_agentenv.results.summary",
    "Headline": "prefect_agentenv.results.summary",
    "OutcomeCounts": "prefect_agentenv.results.summary",
    "axis_values": "prefect_agentenv.results.summary",
    "summarize": "prefect_agentenv.results.summary",
    "CellPair": "prefect_agentenv.results.sweep_tables",
    "CellSummary": "prefect_agentenv.results.sweep_tables",
    "SweepSummary": "prefect_agentenv.results.sweep_tables",
    "results_of_cell": "prefect_agentenv.results.sweep_tables",
    "summarize_sweep": "prefect_agentenv.results.sweep_tables",
    "sweep_gate": "prefect_agentenv.results.sweep_tables",
    "sweep_markdown": "prefect_agentenv.results.sweep_tables",
}


__getattr__ = lazy_names(__name__, _LAZY, globals())

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
