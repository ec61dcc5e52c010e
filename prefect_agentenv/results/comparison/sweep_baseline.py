"""A sweep's part of a benchmark run's summary: each cell summarized and compared with the same
cell of the baseline run, every two cells compared, the gate held to every cell.

A cell of this run pairs with the baseline's cell of the same label; when the baseline was no
sweep, every cell pairs with the whole baseline run (a sweep measured against one earlier setup).
"""

from __future__ import annotations

from collections.abc import Sequence

from prefect_agentenv.results import (
    GateResult,
    SweepSummary,
    TaskResult,
    compare,
    results_of_cell,
    summarize_sweep,
    sweep_gate,
)
from prefect_agentenv.results.store.baseline import BaselineResults, Gate
from prefect_agentenv.results.store.run_store import ResultsStore


def sweep_summary(run: ResultsStore, results: Sequence[TaskResult], cells: Sequence[tuple[str, dict[str, str]]],
                  matrix: dict[str, list[str]], found: BaselineResults | None,
                  gate: Gate) -> tuple[SweepSummary, GateResult | None]:
    """The run's cells (label and overrides, in the matrix's order) summarized, compared with the
    baseline's (``found``: from :func:`~.baseline.baseline_results`) and with each other, and gated."""
    sweep = summarize_sweep(results, cells, matrix, confidence=gate.confidence)
    if found is not None:
        before, label, _ = found
        swept = any(r.cell is not None for r in before)
        compared = []
        for cell in sweep.cells:
            previous = results_of_cell(before, cell.cell if swept else None)
            comparison = compare(results_of_cell(results, cell.cell), previous, confidence=gate.confidence,
                                 current_run_id=f"{run.run_id} · {cell.cell}",
                                 previous_run_id=f"{label} · {cell.cell}" if swept else label)
            compared.append(cell.model_copy(update={"comparison": comparison}))
        sweep = sweep.model_copy(update={"cells": compared})
    return sweep_gate(sweep, fail_under=gate.fail_under, fail_on_regression=gate.fail_on_regression)


def sweep_regressions(sweep: SweepSummary) -> tuple[list[str], list[str]]:
    """Every row a cell's comparison with the baseline marks worse (``cell <label>: …``), and those cells."""
    lines = [f"cell {c.cell}: {line}" for c in sweep.cells if c.comparison for line in c.comparison.regressions]
    return lines, [c.cell for c in sweep.cells if c.comparison and c.comparison.has_regressions]
