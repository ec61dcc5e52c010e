"""What a benchmark run returns: its flow run's result, ``summary.json`` and the last progress event."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from prefect_agentenv.attribute_docs import attribute_docstrings
from prefect_agentenv.results import (
    BenchmarkSummary,
    Comparison,
    GateResult,
    PublishedVersion,
    SweepSummary,
)


class BenchmarkRunResult(BaseModel):
    """One benchmark run, summarised. Its JSON form is the flow run's result and ``summary.json``."""

    model_config = ConfigDict(json_schema_extra=attribute_docstrings)

    run_id: str
    """Resume or compare this run by this id."""
    slug: str
    published: PublishedVersion | None = None
    """The published benchmark version that ran (``SLUG@VERSION`` and its hash); ``None`` for files."""
    headline: str
    """One line: mean score, pass rate, how many passed and errored."""
    summary: BenchmarkSummary
    """Every task run of the run; in a sweep, every cell's pooled (each cell's own is in ``sweep``)."""
    counts: dict[str, int]
    """The outcome counts and their ``total``."""
    regressions: list[str]
    """One line per row (all task runs, a tag, an axis, a task) the paired comparison with the
    baseline run marks worse (empty without a baseline or a regression); in a sweep, each cell's,
    prefixed ``cell <label>:``."""
    regressed_tasks: list[str]
    """The tasks among them."""
    comparison: Comparison | None = None
    """The paired comparison with the baseline run (the previous finished one unless named); ``None``
    in a sweep, whose cells are each compared with the baseline's (``sweep.cells``)."""
    sweep: SweepSummary | None = None
    """A sweep's cells: each one's summary, comparison with the baseline and gate, and every two
    cells compared pair by pair (``None`` when the run was no sweep)."""
    gate: GateResult | None = None
    """The gate's verdict, when one was set (``fail_under``, ``fail_on_regression``)."""
    results_url: str
    """The run's results (JSON lines, one task run per line)."""
    report_url: str | None
    """The HTML report, when it could be written."""
    markdown: str
    """The summary artifact's text."""
    infrastructure_error: str | None = None
    """Why the benchmark failed although every task run ran: more of its task runs failed for
    infrastructure than ``infrastructure.max_error_rate`` allows (``bench`` exits 5)."""
    judge_gate: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """Why the run failed ``require_calibrated_judge``: a gated rubric score rests on a judge setup that
    is uncalibrated, stale or below the required κ (``bench`` exits 6); absent when it passed or was not set."""
