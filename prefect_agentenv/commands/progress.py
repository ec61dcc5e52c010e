"""Live terminal progress for ``prefect-agentenv bench``: a table that fills in as task runs finish."""

from __future__ import annotations

import asyncio
import dataclasses
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from prefect.exceptions import TerminationSignal
from pydantic import BaseModel
from rich.console import Console, Group
from rich.live import Live
from rich.text import Text

from prefect_agentenv.commands.tables import FULL_ERRORS, sweep_tables, task_table
from prefect_agentenv.documents.benchmarks.document import RunBudget
from prefect_agentenv.exceptions import ArtifactError, ConfigurationError, TaskDocumentError
from prefect_agentenv.exit_codes import ExitCode
from prefect_agentenv.flows.benchmark import benchmark, progress_listener
from prefect_agentenv.flows.judge_preflight import preflight_of_file
from prefect_agentenv.grading.judge_setup import MOCK_JUDGE_NOTE
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.results import TaskResult
from prefect_agentenv.results.run_outcome import outcome_of
from prefect_agentenv.results.stats.sweep_summary import short_cell_names
from prefect_agentenv.results.store.baseline import Gate
from prefect_agentenv.results.store.benchmark_result import BenchmarkRunResult

MOCK_ROW_NOTE = "judged by the mock model"
"""A task run's outcome note when a judge of its rubric scores was the built-in mock model."""

_STYLE = {"PASSED": "green", "BELOW_ONE": "yellow", "FAILED": "red", "TIMED_OUT": "red", "UNSCORED": "dim"}


class _Start(BaseModel):
    """The ``start`` event: which run, and how many task runs it has and has left."""

    run_id: str
    slug: str
    total: int
    pending: int
    published: str | None = None
    """``SLUG@VERSION`` when the run is of a published version."""
    cells: list[str] = []
    """A sweep's cell labels, in the matrix's order (none outside a sweep)."""
    axes: list[str] = []
    """A sweep's matrix keys, in order."""


class _Controls(BaseModel):
    """The ``control`` event: the run's controls as its dispatcher applies them (flows/control)."""

    paused: bool = False
    held: bool = False
    concurrency: int | None = None
    running: int = 0
    total: int | None = None
    """The task runs to run, requeued ones included."""
    changes: list[str] = []
    """The latest changes, one line each."""


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
        self.cell_names: dict[str, str] = {}
        """A sweep cell's label → the values that differ (``scripted``), which the board shows."""
        self.shortened = False
        """The last drawing shortened an error to fit (the run then says where each is whole)."""
        self.controls = _Controls()

    def on_event(self, event: str, payload: JsonObject) -> None:
        if event == "start":
            start = _Start.model_validate(payload)
            self.total, self.pending, self.run_id = start.total, start.pending, start.run_id
            self.slug = start.published or start.slug
            self.cell_names = short_cell_names(start.cells, start.axes)
        elif event == "result":
            self.rows.append(_row(TaskResult.model_validate(payload), self.cell_names))
        elif event == "summary":
            self.summary = BenchmarkRunResult.model_validate(payload)
        elif event == "control":
            self.controls = _Controls.model_validate(payload)
            grown = (self.controls.total or 0) - self.total  # requeued task runs join the count still to run
            if grown > 0:
                self.total, self.pending = self.total + grown, self.pending + grown

    def render(self, last: int | None = None, width: int = 80, console: Console | None = None) -> Group:
        """The board at ``width`` columns; with ``last``, only the newest ``last`` rows. A terminal redraws
        the board four times a second, and drawing 1 000 rows took 1-2 s of CPU each time."""
        done = self.total - self.pending + len(self.rows)
        head = Text(f"benchmark {self.slug}  run {self.run_id}  {done}/{self.total} task runs done", style="bold")
        head.append_text(self._control_text())
        shown = self.rows if last is None or len(self.rows) <= last else self.rows[-last:]
        tables, self.shortened = task_table(shown, width=width, sweep=bool(self.cell_names), console=console or Console())
        parts: list[Any] = [head, *(Text(f"  {line}", style="dim") for line in self.controls.changes)]
        if len(shown) < len(self.rows):
            parts.append(Text(f"… {len(self.rows) - len(shown)} earlier task runs (every one is in the results)",
                              style="dim"))
        parts += tables
        if self.summary:
            parts.append(Text(self.summary.headline + "\n", style="bold"))
        return Group(*parts)


    def _control_text(self) -> Text:
        """``  PAUSED  concurrency 4`` after the head line (nothing before the run's first control event)."""
        c = self.controls
        if c.concurrency is None:
            return Text("")
        text = Text("  ")
        if c.paused or c.held:
            text.append("PAUSED" + (" (agents held)" if c.held else ""), style="bold yellow")
            text.append("  ")
        text.append(f"concurrency {c.concurrency}")
        return text


class _SigtermStop:
    """SIGTERM (``kill``, a supervisor stopping the command) stops the benchmark as Ctrl-C does: the
    main task is cancelled, so each running task run tears down what it started and the run can be
    resumed.

    While a flow runs, Prefect's engine puts its own SIGTERM handler in place (it raises
    ``TerminationSignal``) and, when that signal reaches the flow, puts ours back and sends the
    signal again: so ours runs either way, and a ``TerminationSignal`` that left the loop is this stop."""

    def __init__(self) -> None:
        self.fired = False
        main_thread = threading.current_thread() is threading.main_thread()
        self._before = signal.getsignal(signal.SIGTERM) if main_thread else None

    def arm(self) -> None:
        """Called in the running loop's main task: SIGTERM cancels that task."""
        loop, main = asyncio.get_running_loop(), asyncio.current_task()
        if main is None or self._before is None:
            return

        def stop(signum: int, frame: object) -> None:
            self.fired = True
            loop.call_soon_threadsafe(main.cancel)

        signal.signal(signal.SIGTERM, stop)

    def stopped(self, exc: BaseException) -> bool:
        return self.fired or isinstance(exc, TerminationSignal)

    def restore(self) -> None:
        if self._before is not None:
            signal.signal(signal.SIGTERM, self._before)


def _row(r: TaskResult, cell_names: dict[str, str]) -> tuple[str, ...]:
    """A finished task run's cells: task, cell, seed, epoch, outcome and its style, score, seconds, error."""
    score = "-" if r.score is None else f"{r.score:.2f}"
    cell = cell_names.get(r.cell, r.cell) if r.cell else ""
    return (r.task_id, cell, str(r.seed_index), str(r.epoch), _outcome(r), _STYLE.get(r.outcome.value, ""), score,
            f"{r.duration_s or 0:.1f}", r.error or "")


def _outcome(result: TaskResult) -> str:
    """The outcome, marked when it failed for infrastructure or took more than one attempt."""
    notes = ["infrastructure"] if result.infrastructure_failed else []
    notes += [f"{result.attempts} attempts"] if result.attempts > 1 else []
    notes += [MOCK_ROW_NOTE] if any(trust.mock for trust in result.judges) else []
    return result.outcome.value + (f" ({', '.join(notes)})" if notes else "")


def run_benchmark_with_progress(path: Path | str, *, run_id: str | None, overrides: dict[str, str], epochs: int | None,
                                concurrency: int | None, report_dir: Path | None,
                                gate: Gate | None = None, matrix: dict[str, list[str]] | None = None,
                                budget_usd: float | None = None, budget_tokens: int | None = None,
                                record_model_calls: bool = False, replay: str | None = None) -> int:
    """Run the benchmark ``path`` (a file or a published ``SLUG@VERSION``) in this process, drawing
    progress; the exit code for the CLI (0 ran, 1 failed, 4 a gate failed, 5 too many infrastructure
    failures, 6 a rubric score's judge is not calibrated as required, 7 the budget was spent, 130
    interrupted, 143 terminated)."""
    board = _Board()
    console = Console()
    options = gate or Gate()
    if options.require_calibrated_judge is not None:
        refused = _judge_preflight(console, path, overrides, matrix, options.require_calibrated_judge)
        if refused is not None:
            return refused
    token = progress_listener.set(board.on_event)

    sigterm = _SigtermStop()

    async def go() -> Any:
        sigterm.arm()
        state = await benchmark(path=str(path), run_id=run_id, overrides=overrides, matrix=matrix or None, epochs=epochs,
                                concurrency=concurrency, report_dir=str(report_dir) if report_dir else None,
                                budget=_budget(budget_usd, budget_tokens), record_model_calls=record_model_calls,
                                replay=replay, return_state=True, **dataclasses.asdict(options))
        return state, await state.aresult(raise_on_failure=False)

    # A terminal shows the newest rows that fit; a log (no terminal) gets the whole table once, at the end.
    window = max(console.size.height - 8, 5) if console.is_terminal else None
    try:
        with Live(board.render(window, console.width, console), console=console, refresh_per_second=4,
                  transient=False) as live:
            board_events = board.on_event

            def update(event: str, payload: JsonObject) -> None:
                board_events(event, payload)
                if console.is_terminal:  # a log gets the board once, when the run is over
                    live.update(board.render(window, console.width, console))

            progress_listener.set(update)
            state, out = asyncio.run(go())
            live.update(board.render(window, console.width, console))
    except KeyboardInterrupt:
        console.print("interrupted: the running tasks were stopped; resume with --resume " + board.run_id)
        return int(ExitCode.SIGINT)
    except (asyncio.CancelledError, TerminationSignal) as exc:
        if not sigterm.stopped(exc):
            raise
        console.print("terminated (SIGTERM): the running tasks were stopped; resume with --resume " + board.run_id)
        return int(ExitCode.SIGTERM)
    finally:
        progress_listener.reset(token)
        sigterm.restore()
    if not isinstance(out, dict):
        console.print(f"[red]the benchmark failed:[/red] {state.message}")
        return int(ExitCode.FAILED)
    result = BenchmarkRunResult.model_validate(out)
    _print_after_run(console, board, result, path, report_dir)
    return _exit_code(console, result, completed=state.is_completed())


def _exit_code(console: Console, result: BenchmarkRunResult, *, completed: bool) -> int:
    """The CLI's exit code for a finished run, with its one line: the run's outcome, decided once
    (``results.run_outcome``) for the exit code, the summary and the flow run's Prefect state."""
    outcome = outcome_of(result)
    if outcome.line is not None:
        # One line on stderr, whatever the terminal's width: a pipeline's log shows why it stopped.
        sys.stderr.write(outcome.line + "\n")
        return int(outcome.exit_code)
    if outcome.note is not None:
        console.print(outcome.note, markup=False, highlight=False, soft_wrap=True)
    return int(ExitCode.OK if completed else ExitCode.FAILED)




def _judge_preflight(console: Console, path: Path | str, overrides: dict[str, str],
                     matrix: dict[str, list[str]] | None, min_kappa: float) -> int | None:
    """The judge gate before the flow starts, in one line: a refusal is exit 6 with no flow run and no task
    run; a bad document is left for the flow to refuse with its own message."""
    try:
        verdict = asyncio.run(preflight_of_file(str(path), overrides, matrix, min_kappa))
    except (TaskDocumentError, ConfigurationError, ArtifactError):
        return None
    if not verdict.passed:
        sys.stderr.write(verdict.line + "\n")
        return int(ExitCode.JUDGE_GATE)
    console.print(verdict.line, markup=False, highlight=False, soft_wrap=True)
    return None


def _budget(usd: float | None, tokens: int | None) -> RunBudget | None:
    """``--budget-usd`` and ``--budget-tokens`` as the flow's ``budget`` (the document's when neither is given)."""
    return RunBudget(usd=usd, tokens=tokens) if usd is not None or tokens is not None else None


def _print_after_run(console: Console, board: _Board, result: BenchmarkRunResult, path: Path | str,
                     report_dir: Path | None) -> None:
    """Under the board: where shortened errors are whole, a sweep's tables, the comparison, where the
    results are and how to resume."""
    if board.shortened:
        console.print(f"errors are shortened to fit; each in full: {FULL_ERRORS.format(slug=board.slug, run_id=board.run_id)}",
                      soft_wrap=True, markup=False, highlight=False)
    if any(MOCK_ROW_NOTE in row[4] for row in board.rows):
        console.print(f"{MOCK_ROW_NOTE}: {MOCK_JUDGE_NOTE.removeprefix(MOCK_ROW_NOTE + ': ')}; its scores say "
                      "nothing about the agent until a real judge grades them", markup=False, highlight=False,
                      soft_wrap=True)
    if result.sweep is not None:
        console.print(*sweep_tables(result.sweep))
    if result.comparison is not None:
        console.print(f"compared with run {result.comparison.previous_run_id}: {result.comparison.setup.sentence()}",
                      markup=False, highlight=False)
    if result.regressions:
        console.print(f"[yellow]{len(result.regressions)} regression(s) against the baseline run[/yellow]")
    # Paths and commands on one line however narrow the terminal: a broken URL cannot be pasted.
    console.print(f"results: {result.results_url}", soft_wrap=True, markup=False, highlight=False)
    if report_dir:
        console.print(f"summary: {report_dir / 'summary.md'}", soft_wrap=True, markup=False, highlight=False)
    console.print(f"resume or rerun missing tasks with: prefect-agentenv bench {path} --resume {result.run_id}",
                  soft_wrap=True, markup=False, highlight=False)
