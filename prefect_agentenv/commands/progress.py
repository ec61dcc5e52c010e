"""Live terminal progress for ``prefect-agentenv bench``: a table that fills in as task runs finish."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from prefect_agentenv.flows.benchmark import benchmark, progress_listener
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.results import GATE_EXIT_CODE, SweepSummary, TaskResult
from prefect_agentenv.results.baseline import Gate
from prefect_agentenv.results.benchmark_result import BenchmarkRunResult

INFRASTRUCTURE_EXIT_CODE = 5
"""``bench`` exits 5 when more task runs failed for infrastructure than ``infrastructure.max_error_rate`` allows."""

_STYLE = {"PASSED": "green", "BELOW_ONE": "yellow", "FAILED": "red", "TIMED_OUT": "red", "UNSCORED": "dim"}


class _Start(BaseModel):
    """The ``start`` event: which run, and how many task runs it has and has left."""

    run_id: str
    slug: str
    total: int
    pending: int
    published: str | None = None
    """``SLUG@VERSION`` when the run is of a published version."""


class _Board:
    """What the terminal shows: a header line and one row per finished task run.

    The flow's events arrive as JSON (``start``, a task run's ``result``, the ``summary``); each
    is read back into its model here.
    """

    def __init__(self) -> None:
        self.total = self.pending = 0
        self.run_id = self.slug = ""
        self.rows: list[tuple[str, ...]] = []
        """The table's cells of each finished task run (not the results: a nightly of 1 000 task runs
        kept ~6.6 KB of model per task run in the flow process)."""
        self.summary: BenchmarkRunResult | None = None

    def on_event(self, event: str, payload: JsonObject) -> None:
        if event == "start":
            start = _Start.model_validate(payload)
            self.total, self.pending, self.run_id = start.total, start.pending, start.run_id
            self.slug = start.published or start.slug
        elif event == "result":
            self.rows.append(_row(TaskResult.model_validate(payload)))
        elif event == "summary":
            self.summary = BenchmarkRunResult.model_validate(payload)

    def render(self, last: int | None = None) -> Group:
        """The board; with ``last``, only the newest ``last`` rows. A terminal redraws the board four
        times a second, and drawing 1 000 rows took 1-2 s of CPU each time."""
        done = self.total - self.pending + len(self.rows)
        head = Text(f"benchmark {self.slug}  run {self.run_id}  {done}/{self.total} task runs done", style="bold")
        table = Table(show_edge=False)
        for column in ("task", "seed", "epoch", "outcome", "score", "seconds", "error"):
            table.add_column(column)
        shown = self.rows if last is None or len(self.rows) <= last else self.rows[-last:]
        for task, seed, epoch, outcome, style, score, seconds, error in shown:
            table.add_row(task, seed, epoch, Text(outcome, style=style), score, seconds, error)
        parts: list[Any] = [head]
        if len(shown) < len(self.rows):
            parts.append(Text(f"… {len(self.rows) - len(shown)} earlier task runs (every one is in the results)",
                              style="dim"))
        parts.append(table)
        if self.summary:
            parts.append(Text(self.summary.headline + "\n", style="bold"))
        return Group(*parts)


def _row(r: TaskResult) -> tuple[str, ...]:
    """A finished task run's cells: task, seed, epoch, outcome and its style, score, seconds, error."""
    score = "-" if r.score is None else f"{r.score:.2f}"
    return (r.task_id + (f" · {r.cell}" if r.cell else ""), str(r.seed_index), str(r.epoch), _outcome(r),
            _STYLE.get(r.outcome.value, ""), score, f"{r.duration_s or 0:.1f}", (r.error or "")[:60])


def sweep_tables(sweep: SweepSummary) -> list[Table]:
    """A sweep's cells (mean, interval, pass rate, pass@k) and every two cells compared pair by pair."""
    cells = Table(title="sweep: cells", show_edge=False)
    for column in ("cell", "n", "mean score", "CI", "pass rate", "pass@k", "vs baseline", "gate"):
        cells.add_column(column)
    for c in sweep.cells:
        s, ci = c.summary, c.summary.mean_score_ci
        overall = c.comparison.overall if c.comparison else None
        cells.add_row(c.cell, str(s.counts.denominator), _num(s.mean_score), f"{ci.low:.3f}–{ci.high:.3f}" if ci else "-",
                      "-" if s.pass_rate is None else f"{s.pass_rate:.0%}",
                      "-" if s.pass_at_k is None else f"pass@{s.k} {s.pass_at_k:.3f}",
                      overall.verdict if overall else "-", "-" if c.gate is None else "passed" if c.gate.passed else "failed")
    pairs = Table(title="sweep: cells compared pair by pair", show_edge=False)
    for column in ("baseline cell", "other cell", "pairs", "pass rate", "mean score", "difference (CI)", "verdict"):
        pairs.add_column(column)
    for p in sweep.pairwise:
        row = p.overall
        t, sc = (row.pass_fail, row.score) if row else (None, None)
        diff = "-" if sc is None else f"{sc.difference:+.3f}" + (
            f" ({sc.interval.low:+.3f} to {sc.interval.high:+.3f})" if sc.interval else "")
        pairs.add_row(p.baseline, p.other, str(p.pairs),
                      "-" if t is None else f"{t.previous_rate:.0%} → {t.current_rate:.0%} (McNemar p={t.p_value:.2g})",
                      "-" if sc is None else f"{sc.previous_mean:.3f} → {sc.current_mean:.3f}", diff,
                      Text(row.verdict if row else "no pair", style=_VERDICT_STYLE.get(row.verdict if row else "", "")))
    return [cells, pairs] if sweep.pairwise else [cells]


_VERDICT_STYLE = {"worse": "red", "better": "green"}


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _outcome(result: TaskResult) -> str:
    """The outcome, marked when it failed for infrastructure or took more than one attempt."""
    notes = ["infrastructure"] if result.infrastructure_failed else []
    notes += [f"{result.attempts} attempts"] if result.attempts > 1 else []
    return result.outcome.value + (f" ({', '.join(notes)})" if notes else "")


def run_benchmark_with_progress(path: Path | str, *, run_id: str | None, overrides: dict[str, str], epochs: int | None,
                                concurrency: int | None, report_dir: Path | None,
                                gate: Gate | None = None, matrix: dict[str, list[str]] | None = None) -> int:
    """Run the benchmark flow in this process, drawing progress; the exit code for the CLI (0 ran,
    1 failed, 4 a gate failed, 5 too many infrastructure failures, 130 interrupted).

    ``path`` is a benchmark file or a published version ``SLUG@VERSION``."""
    board = _Board()
    console = Console()
    token = progress_listener.set(board.on_event)
    options = gate or Gate()

    async def go() -> Any:
        state = await benchmark(path=str(path), run_id=run_id, overrides=overrides, matrix=matrix or None, epochs=epochs,
                                concurrency=concurrency, report_dir=str(report_dir) if report_dir else None,
                                return_state=True, **dataclasses.asdict(options))
        return state, await state.aresult(raise_on_failure=False)

    # A terminal shows the newest rows that fit; a log (no terminal) gets the whole table once, at the end.
    window = max(console.size.height - 8, 5) if console.is_terminal else None
    try:
        with Live(board.render(window), console=console, refresh_per_second=4, transient=False) as live:
            board_events = board.on_event

            def update(event: str, payload: JsonObject) -> None:
                board_events(event, payload)
                live.update(board.render(window))

            progress_listener.set(update)
            state, out = asyncio.run(go())
    except KeyboardInterrupt:
        console.print("interrupted: the running tasks were stopped; resume with --resume " + board.run_id)
        return 130
    finally:
        progress_listener.reset(token)
    if not isinstance(out, dict):
        console.print(f"[red]the benchmark failed:[/red] {state.message}")
        return 1
    result = BenchmarkRunResult.model_validate(out)
    if result.sweep is not None:
        console.print(*sweep_tables(result.sweep))
    if result.comparison is not None:
        console.print(f"compared with run {result.comparison.previous_run_id}: {result.comparison.setup.sentence()}",
                      markup=False, highlight=False)
    if result.regressions:
        console.print(f"[yellow]{len(result.regressions)} regression(s) against the baseline run[/yellow]")
    console.print(f"results: {result.results_url}")
    if report_dir:
        console.print(f"summary: {report_dir / 'summary.md'}")
    console.print(f"resume or rerun missing tasks with: prefect-agentenv bench {path} --resume {result.run_id}")
    if result.infrastructure_error:
        console.print(f"[red]the benchmark failed:[/red] {result.infrastructure_error}")
        return INFRASTRUCTURE_EXIT_CODE  # before the gate: too many infrastructure failures make its verdict moot
    if result.gate is not None and not result.gate.passed:
        # One line on stderr, whatever the terminal's width: a pipeline's log shows why it stopped.
        sys.stderr.write(f"gate failed: {result.gate.reason}\n")
        return GATE_EXIT_CODE
    if result.gate is not None:
        console.print(f"gate passed: {result.gate.reason}", markup=False, highlight=False, soft_wrap=True)
    return 0 if state.is_completed() else 1
