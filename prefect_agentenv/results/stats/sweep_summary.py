"""A sweep: one benchmark run over several cells (agents, models…), summarized cell by cell and
compared between cells pair by pair.

A cell is one combination of the sweep's axes (``a2a_agent_id=llm,model=m``); every cell runs the
same tasks, seeds and epochs, so two cells pair exactly, key for key, as two runs do in
:func:`~.compare.compare` (the earlier cell of the matrix is the pair's baseline). Each cell has
its own summary (mean, intervals, pass@k) and, when the run has a baseline, its own paired
comparison with the same cell of the baseline run. The gate (:func:`sweep_gate`) holds every
cell to it: one failing cell fails the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

from pydantic import Field

from prefect_agentenv.results.comparison.compare import Comparison, PairedRow, compare
from prefect_agentenv.results.comparison.compare_markdown import p_text, shown_interval, verdict_cell
from prefect_agentenv.results.comparison.gate import GateResult, check_gate
from prefect_agentenv.results.rows import StatsModel, TaskResult
from prefect_agentenv.results.stats.intervals import DEFAULT_CONFIDENCE
from prefect_agentenv.results.stats.summary import BenchmarkSummary, summarize
from prefect_agentenv.results.stats.summary_markdown import cell as md_cell
from prefect_agentenv.results.stats.summary_markdown import percentage


class CellSummary(StatsModel):
    """One cell of a sweep: its overrides, its summary, its comparison with the baseline's cell."""

    cell: str
    """The cell's label: its axes' ``KEY=VALUE`` pairs, comma-separated, in the matrix's order."""
    overrides: dict[str, str] = Field(default_factory=dict)
    """The overrides the cell applies on top of the run's."""
    summary: BenchmarkSummary
    comparison: Comparison | None = None
    """Paired with the same cell of the baseline run (or the whole baseline when it was no sweep)."""
    gate: GateResult | None = None
    """The gate's verdict for this cell, when a gate was set."""


class CellPair(StatsModel):
    """Two cells of a sweep compared pair by pair: ``other`` against ``baseline``."""

    baseline: str
    """The cell that comes first in the matrix."""
    other: str
    pairs: int
    """Task runs (task, seed, epoch) counted in both cells."""
    overall: PairedRow | None = None
    """All paired task runs: McNemar on pass/fail, the paired bootstrap and sign test on scores."""


class SweepSummary(StatsModel):
    """A sweep's cells, each summarized, and every pair of cells compared."""

    axes: dict[str, list[str]]
    """The matrix: each override key with its values."""
    confidence: float = DEFAULT_CONFIDENCE
    cells: list[CellSummary]
    pairwise: list[CellPair] = Field(default_factory=list)

    def cell(self, label: str) -> CellSummary | None:
        return next((c for c in self.cells if c.cell == label), None)


def short_cell_names(labels: Sequence[str], keys: Sequence[str]) -> dict[str, str]:
    """Each cell's label cut to the values that differ between the cells (``scripted``, ``llm``), in
    the matrix's order: a terminal table at 80 columns cut ``a2a_agent_id=scripted`` and
    ``a2a_agent_id=llm`` to the same ``a2a_agen…``. The full labels stay in every record.

    A label that does not read as the keys' ``KEY=VALUE`` pairs, or names that would collide, give
    the full labels back.
    """
    split = {label: _label_values(label, keys) for label in labels}
    if not keys or any(values is None for values in split.values()):
        return {label: label for label in labels}
    rows = [values for values in split.values() if values is not None]
    varying = [i for i in range(len(keys)) if len({values[i] for values in rows}) > 1] or list(range(len(keys)))
    names = {label: ",".join(values[i] for i in varying) for label, values in split.items() if values is not None}
    return names if len(set(names.values())) == len(names) else {label: label for label in labels}


def varying_keys(labels: Sequence[str], keys: Sequence[str]) -> list[str]:
    """The matrix keys whose value differs between the cells: what :func:`short_cell_names` keeps."""
    split = [_label_values(label, keys) for label in labels]
    rows = [values for values in split if values is not None]
    if len(rows) != len(split):
        return list(keys)
    return [key for i, key in enumerate(keys) if len({values[i] for values in rows}) > 1] or list(keys)


def _label_values(label: str, keys: Sequence[str]) -> list[str] | None:
    """``a2a_agent_id=llm,model=m`` → ``["llm", "m"]`` for keys ``a2a_agent_id, model`` (None if it is not that)."""
    values, rest = [], label
    for i, key in enumerate(keys):
        if not rest.startswith(f"{key}="):
            return None
        rest = rest[len(key) + 1:]
        following = f",{keys[i + 1]}=" if i + 1 < len(keys) else None
        value, sep, tail = rest.partition(following) if following else (rest, "", "")
        if following and not sep:
            return None
        values.append(value)
        rest = f"{keys[i + 1]}={tail}" if following else ""
    return values


def results_of_cell(results: Sequence[TaskResult], cell: str | None) -> list[TaskResult]:
    """The results of one cell with the cell taken off, so two cells (or a cell and a run that
    was no sweep) pair by task, seed and epoch."""
    return [r.model_copy(update={"cell": None}) for r in results if r.cell == cell]


def summarize_sweep(results: Sequence[TaskResult], cells: Sequence[tuple[str, dict[str, str]]],
                    axes: dict[str, list[str]], *, confidence: float = DEFAULT_CONFIDENCE) -> SweepSummary:
    """Each cell's summary and the paired comparison of every two cells (in the matrix's order).

    Args:
        results: the run's results, every cell's (the last result of each run key wins).
        cells: each cell's label and overrides, in the matrix's order.
        axes: the matrix.
        confidence: the level of every interval and verdict.
    """
    own = {label: results_of_cell(results, label) for label, _ in cells}
    summaries = [CellSummary(cell=label, overrides=dict(overrides), summary=summarize(own[label], confidence=confidence))
                 for label, overrides in cells]
    pairwise = []
    for (first, _), (second, _) in combinations(cells, 2):
        paired = compare(own[second], own[first], confidence=confidence, current_run_id=second,
                         previous_run_id=first)
        pairwise.append(CellPair(baseline=first, other=second, pairs=paired.pairs, overall=paired.overall))
    return SweepSummary(axes=axes, confidence=confidence, cells=summaries, pairwise=pairwise)


def sweep_gate(sweep: SweepSummary, *, fail_under: float | None = None,
               fail_on_regression: bool = False) -> tuple[SweepSummary, GateResult | None]:
    """Every cell held to the gate (its mean score, its comparison with the baseline's cell); the
    run passes when every cell does. ``None`` when no gate was set."""
    cells = [c.model_copy(update={"gate": check_gate(c.summary, c.comparison, fail_under=fail_under,
                                                     fail_on_regression=fail_on_regression)})
             for c in sweep.cells]
    gated = sweep.model_copy(update={"cells": cells})
    verdicts = [(c.cell, c.gate) for c in cells if c.gate is not None]
    if not verdicts:
        return gated, None
    failed = [f"cell {label}: {gate.reason}" for label, gate in verdicts if not gate.passed]
    checks = [f"cell {label}: {gate.reason}" for label, gate in verdicts]
    return gated, GateResult(passed=not failed, reason="; ".join(failed) if failed else "; ".join(checks),
                             checks=checks, fail_under=fail_under, fail_on_regression=fail_on_regression)


def sweep_markdown(sweep: SweepSummary) -> str:
    """The summary's sweep section: a row per cell, then a row per pair of cells."""
    lines = ["## Sweep", "", f"{len(sweep.cells)} cell(s) over " + ", ".join(
        f"`{key}` ({', '.join(values)})" for key, values in sweep.axes.items()) + ".", "",
             "| cell | n | mean score (CI) | pass rate (CI) | pass@k | vs baseline | gate |",
             "|---|---|---|---|---|---|---|"]
    lines += [_cell_line(c) for c in sweep.cells]
    if sweep.pairwise:
        lines += ["", "### Cells compared pair by pair", "",
                  "| baseline cell | other cell | pairs | pass rate | McNemar | mean score | difference (CI) | "
                  "sign test | verdict |", "|---|---|---|---|---|---|---|---|---|"]
        lines += [_pair_line(p) for p in sweep.pairwise]
        lines += ["", f"*Cells paired by task, seed and epoch; {percentage(sweep.confidence)} confidence.*"]
    return "\n".join(lines)


def _cell_line(c: CellSummary) -> str:
    s = c.summary
    mean = "—" if s.mean_score is None else f"{s.mean_score:.3f}"
    if s.mean_score_ci is not None:
        mean += f" ({s.mean_score_ci.low:.3f}–{s.mean_score_ci.high:.3f})"
    rate = percentage(s.pass_rate)
    if s.pass_rate_ci is not None:
        rate += f" ({percentage(s.pass_rate_ci.low)}–{percentage(s.pass_rate_ci.high)})"
    pass_k = "—" if s.k is None or s.pass_at_k is None else f"pass@{s.k} {s.pass_at_k:.3f}"
    versus = "—" if c.comparison is None or c.comparison.overall is None else verdict_cell(c.comparison.overall, bold=False)
    gate = "—" if c.gate is None else ("passed" if c.gate.passed else "**failed**")
    return f"| {md_cell(c.cell)} | {s.counts.denominator} | {mean} | {rate} | {pass_k} | {versus} | {gate} |"


def _pair_line(p: CellPair) -> str:
    head = f"| {md_cell(p.baseline)} | {md_cell(p.other)} | {p.pairs} |"
    row = p.overall
    if row is None:
        return head + " — | — | — | — | — | no pair |"
    t, s = row.pass_fail, row.score
    passes = (f" {percentage(t.previous_rate)} → {percentage(t.current_rate)} | {p_text(t.p_value)} "
              f"({t.lost} lost, {t.gained} gained) |") if t else " — | — |"
    scores = (f" {s.previous_mean:.3f} → {s.current_mean:.3f} | {s.difference:+.3f}"
              f"{shown_interval(s, row)} | {p_text(s.p_value)} |") if s else " — | — | — |"
    return f"{head}{passes}{scores} {verdict_cell(row)} |"
