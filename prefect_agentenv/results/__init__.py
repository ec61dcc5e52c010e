"""A benchmark run's results: task reports, the results store, and their statistics.

What a task run leaves, at the top: ``task_report`` (its report, a stable JSON contract),
``result_row`` (its result row, made from the report or from a crash that left none) and ``rows``
(the row models, run keys, the denominator policy, axis scores, the setup fingerprint a row
carries). Then four rooms:

* ``store`` — where results are kept and how a run is found again (the runs index, scoring
  versions, baselines, fingerprints).
* ``stats`` — pure statistics over rows: intervals, paired tests, a run's summary and its
  markdown, a run's setup, changes, sweeps.
* ``comparison`` — a run against a baseline, the gates, and a run's verdicts.
* ``judges`` — human labels, agreement and calibration: how far a judge can be trusted.

This package's names load on first use.

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
    from prefect_agentenv.results.comparison.compare import (
        Comparison,
        PairedRow,
        PassFailTest,
        ScoreTest,
        Verdict,
        compare,
    )
    from prefect_agentenv.results.comparison.gate import GateResult, check_gate
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
    from prefect_agentenv.results.stats.changes import ChangeKind, TaskChange, TaskChanges, task_changes
    from prefect_agentenv.results.stats.intervals import (
        DEFAULT_CONFIDENCE,
        Interval,
        mean_interval,
        pass_at_k,
        pass_hat_k,
        student_t_quantile,
        wilson_interval,
    )
    from prefect_agentenv.results.stats.paired import (
        DEFAULT_RESAMPLES,
        DEFAULT_SEED,
        binomial_two_sided,
        mcnemar,
        paired_bootstrap,
        sign_test,
    )
    from prefect_agentenv.results.stats.run_setup import (
        RunSetup,
        SetupComparison,
        SetupDifference,
        compare_setups,
        run_setup,
    )
    from prefect_agentenv.results.stats.summary import (
        BenchmarkSummary,
        Breakdown,
        FailureSummary,
        Headline,
        OutcomeCounts,
        axis_values,
        summarize,
    )
    from prefect_agentenv.results.stats.summary_markdown import summary_markdown
    from prefect_agentenv.results.stats.sweep_summary import (
        CellPair,
        CellSummary,
        SweepSummary,
        results_of_cell,
        summarize_sweep,
        sweep_gate,
        sweep_markdown,
    )

_LAZY = {
    "ChangeKind": "prefect_agentenv.results.stats.changes",
    "TaskChange": "prefect_agentenv.results.stats.changes",
    "TaskChanges": "prefect_agentenv.results.stats.changes",
    "task_changes": "prefect_agentenv.results.stats.changes",
    "Comparison": "prefect_agentenv.results.comparison.compare",
    "PairedRow": "prefect_agentenv.results.comparison.compare",
    "PassFailTest": "prefect_agentenv.results.comparison.compare",
    "ScoreTest": "prefect_agentenv.results.comparison.compare",
    "Verdict": "prefect_agentenv.results.comparison.compare",
    "compare": "prefect_agentenv.results.comparison.compare",
    "GateResult": "prefect_agentenv.results.comparison.gate",
    "check_gate": "prefect_agentenv.results.comparison.gate",
    "DEFAULT_CONFIDENCE": "prefect_agentenv.results.stats.intervals",
    "Interval": "prefect_agentenv.results.stats.intervals",
    "mean_interval": "prefect_agentenv.results.stats.intervals",
    "pass_at_k": "prefect_agentenv.results.stats.intervals",
    "pass_hat_k": "prefect_agentenv.results.stats.intervals",
    "student_t_quantile": "prefect_agentenv.results.stats.intervals",
    "wilson_interval": "prefect_agentenv.results.stats.intervals",
    "summary_markdown": "prefect_agentenv.results.stats.summary_markdown",
    "DEFAULT_RESAMPLES": "prefect_agentenv.results.stats.paired",
    "DEFAULT_SEED": "prefect_agentenv.results.stats.paired",
    "binomial_two_sided": "prefect_agentenv.results.stats.paired",
    "mcnemar": "prefect_agentenv.results.stats.paired",
    "paired_bootstrap": "prefect_agentenv.results.stats.paired",
    "sign_test": "prefect_agentenv.results.stats.paired",
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
    "RunSetup": "prefect_agentenv.results.stats.run_setup",
    "SetupComparison": "prefect_agentenv.results.stats.run_setup",
    "SetupDifference": "prefect_agentenv.results.stats.run_setup",
    "compare_setups": "prefect_agentenv.results.stats.run_setup",
    "run_setup": "prefect_agentenv.results.stats.run_setup",
    "BenchmarkSummary": "prefect_agentenv.results.stats.summary",
    "Breakdown": "prefect_agentenv.results.stats.summary",
    "FailureSummary": "prefect_agentenv.results.stats.summary",
    "Headline": "prefect_agentenv.results.stats.summary",
    "OutcomeCounts": "prefect_agentenv.results.stats.summary",
    "axis_values": "prefect_agentenv.results.stats.summary",
    "summarize": "prefect_agentenv.results.stats.summary",
    "CellPair": "prefect_agentenv.results.stats.sweep_summary",
    "CellSummary": "prefect_agentenv.results.stats.sweep_summary",
    "SweepSummary": "prefect_agentenv.results.stats.sweep_summary",
    "results_of_cell": "prefect_agentenv.results.stats.sweep_summary",
    "summarize_sweep": "prefect_agentenv.results.stats.sweep_summary",
    "sweep_gate": "prefect_agentenv.results.stats.sweep_summary",
    "sweep_markdown": "prefect_agentenv.results.stats.sweep_summary",
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
