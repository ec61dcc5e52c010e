"""A sweep's statistics: each cell summarized on its own, every two cells paired key for key."""

from __future__ import annotations

import pytest

from prefect_agentenv.grading.outcome import Outcome
from prefect_agentenv.results import (
    TaskResult,
    compare,
    results_of_cell,
    summarize_sweep,
    sweep_gate,
    sweep_markdown,
)

CELLS = [("model=a", {"model": "a"}), ("model=b", {"model": "b"}), ("model=c", {"model": "c"})]
AXES = {"model": ["a", "b", "c"]}


def results(cell: str, passes: int, runs: int = 8) -> list[TaskResult]:
    """``runs`` task runs of one cell (4 tasks × 2 epochs), the first ``passes`` passing."""
    return [TaskResult(task_id=f"t{i // 2}", epoch=i % 2, status="completed", tags=["mail"], cell=cell,
                       outcome=Outcome.PASSED if i < passes else Outcome.BELOW_ONE, score=1.0 if i < passes else 0.0)
            for i in range(runs)]


def test_each_cell_is_summarized_alone_and_every_two_cells_are_paired() -> None:
    given = results("model=a", 8) + results("model=b", 8) + results("model=c", 0)
    sweep = summarize_sweep(given, CELLS, AXES)
    assert [(c.cell, c.summary.mean_score, c.summary.counts.total) for c in sweep.cells] == [
        ("model=a", 1.0, 8), ("model=b", 1.0, 8), ("model=c", 0.0, 8)]
    assert sweep.cells[0].summary.pass_at_k == 1.0 and sweep.cells[2].summary.pass_at_k == 0.0
    assert [(p.baseline, p.other, p.pairs) for p in sweep.pairwise] == [
        ("model=a", "model=b", 8), ("model=a", "model=c", 8), ("model=b", "model=c", 8)]
    verdicts = [p.overall.verdict if p.overall else None for p in sweep.pairwise]
    assert verdicts == ["tied", "worse", "worse"]
    # The pair of two cells is the paired comparison of two runs, with the cells taken off.
    direct = compare(results_of_cell(given, "model=c"), results_of_cell(given, "model=a"))
    assert sweep.pairwise[1].overall == direct.overall
    assert direct.overall is not None and direct.overall.pass_fail is not None
    assert direct.overall.pass_fail.p_value == pytest.approx(2 / 2 ** 8)


def test_the_gate_holds_every_cell_and_names_the_ones_that_fail() -> None:
    sweep = summarize_sweep(results("model=a", 8) + results("model=b", 2) + results("model=c", 8), CELLS, AXES)
    gated, gate = sweep_gate(sweep, fail_under=0.5)
    assert gate is not None and not gate.passed
    assert gate.reason == "cell model=b: mean score 0.250 is under 0.5"
    assert [c.gate.passed if c.gate else None for c in gated.cells] == [True, False, True]
    assert sweep_gate(sweep) == (sweep, None)  # no gate set


def test_the_markdown_has_a_row_per_cell_and_per_pair() -> None:
    sweep = summarize_sweep(results("model=a", 8) + results("model=b", 8) + results("model=c", 0), CELLS, AXES)
    text = sweep_markdown(sweep)
    assert "3 cell(s) over `model` (a, b, c)." in text
    assert "| model=c | 8 | 0.000 (0.000–0.000) | 0% (0%–32.4%) | pass@2 0.000 | — | — |" in text
    assert "| model=a | model=c | 8 | 100% → 0% | p=0.0078 (8 lost, 0 gained) |" in text and "**worse**" in text
