"""The tables ``bench`` prints, laid out for the width they get: an 80-column terminal or a CI log.

Every row keeps its identity whole (a task id, a sweep cell): rich shrinks a table that does not
fit by cutting cells, and at 80 columns it cut two cells to the same ``a2a_agen…``. So the
identifying columns never wrap or get cut, sweep cells go by the values that differ (the key is
in the title), and free text (an error) is shortened at a word boundary to the room left, with
the whole text one command away (:data:`FULL_ERRORS`).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from prefect_agentenv.results import SweepSummary
from prefect_agentenv.results.comparison.compare import PairedRow
from prefect_agentenv.results.comparison.compare_markdown import verdict_cell
from prefect_agentenv.results.stats.sweep_summary import short_cell_names, varying_keys

FULL_ERRORS = "prefect-agentenv view --benchmark {slug} --run {run_id}"
"""Where a shortened error is whole: the HTML report's task-run page shows each error in full."""

MIN_ERROR_WIDTH = 20
"""Below this an error column says too little to be worth its room: errors go under the table instead."""

VERDICT_STYLE = {"worse": "red", "better": "green"}

TASK_COLUMNS = ("task", "cell", "seed", "epoch", "outcome", "score", "seconds")
"""The board's columns before the error; ``cell`` only in a sweep."""


def shorten(text: str, width: int) -> str:
    """``text`` on one line in at most ``width`` characters, cut at a word boundary with ``…``."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    cut = flat[: max(width - 1, 1)]
    if " " in cut and flat[len(cut)] != " ":
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:") + "…"


def _table(title: str | None = None) -> Table:
    """A table without vertical rules: at 80 columns every character goes to the cells."""
    return Table(title=title, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1),
                 collapse_padding=True, title_justify="left")


def task_table(rows: Sequence[tuple[str, ...]], *, width: int, sweep: bool,
               console: Console) -> tuple[list[Table | Text], bool]:
    """The board's task runs (``rows``: task, cell, seed, epoch, outcome, style, score, seconds, error),
    the errors shortened to the room the other columns leave — or, when that is under
    :data:`MIN_ERROR_WIDTH`, one line each under the table; with whether one had to be shortened."""
    errors = [" ".join(row[-1].split()) for row in rows]
    # Task ids stay on one line unless the table cannot fit so with the outcomes wrapped: then they
    # fold, whole, in the room the other columns leave.
    fold = Measurement.get(console, console.options.update(width=10_000),
                           _task_rows(rows, sweep, None, False)).minimum > width
    if not any(errors):
        return [_task_rows(rows, sweep, None, fold)], False
    # The table with a one-character error column measures everything but the error's own room.
    probe = _task_rows(rows, sweep, ["x"] * len(rows), fold)
    room = width - (_widest(console, probe) - 1)
    if room >= MIN_ERROR_WIDTH:
        return [_task_rows(rows, sweep, [shorten(e, room) for e in errors], fold)], any(len(e) > room for e in errors)
    lines, shortened = [], False
    for row, error in zip(rows, errors, strict=True):
        if error:
            who = f"error in {row[0]}{f' {row[1]}' if sweep else ''} seed {row[2]} epoch {row[3]}: "
            # A long task id leaves the error too little room on its line: the error goes on the next.
            room, lead = (width - len(who), who) if width - len(who) >= MIN_ERROR_WIDTH else (width - 2, who.rstrip() + "\n  ")
            shortened = shortened or len(error) > room
            lines.append(Text(lead + shorten(error, room), style="dim"))
    return [_task_rows(rows, sweep, None, fold), *lines], shortened


def _widest(console: Console, table: Table) -> int:
    """The width ``table`` takes when nothing has to wrap."""
    return Measurement.get(console, console.options.update(width=10_000), table).maximum


def _task_rows(rows: Sequence[tuple[str, ...]], sweep: bool, errors: list[str] | None, fold: bool) -> Table:
    """The table; rich narrows only the wrapable columns, so the outcome (``FAILED (infrastructure,
    3 attempts)``) wraps at its spaces and, with ``fold``, a long task id folds whole; nothing is cut."""
    table = _table()
    # When task ids fold, the outcomes wrap at every space first, so the ids keep all the room left.
    narrow = max((len(word) for row in rows for word in row[4].split()), default=9) if fold else None
    for column in TASK_COLUMNS:
        if column != "cell" or sweep:
            wraps = column == "outcome" or (column == "task" and fold)
            table.add_column(column, no_wrap=not wraps, overflow="fold", min_width=9 if column == "outcome" else None,
                             max_width=narrow if column == "outcome" else None,
                             justify="right" if column in ("score", "seconds") else "left")
    if errors is not None:
        table.add_column("error", no_wrap=True)
    for i, (task, cell, seed, epoch, outcome, style, score, seconds, _) in enumerate(rows):
        table.add_row(task, *([cell] if sweep else []), seed, epoch, Text(outcome, style=style), score, seconds,
                      *([errors[i]] if errors is not None else []))
    return table


def sweep_tables(sweep: SweepSummary) -> list[Table | Text]:
    """A sweep's cells (mean and interval, pass rate, pass@k) and every two cells compared pair by pair,
    each cell by the values that differ, and each pair's reason for its verdict under its table."""
    labels = [c.cell for c in sweep.cells]
    keys = list(sweep.axes)
    names = short_cell_names(labels, keys)
    over = ", ".join(varying_keys(labels, keys))
    return [_cells_table(sweep, names, over), *(_pairs_parts(sweep, names, over) if sweep.pairwise else [])]


def _cells_table(sweep: SweepSummary, names: dict[str, str], over: str) -> Table:
    gated = any(c.gate is not None for c in sweep.cells)
    compared = any(c.comparison is not None for c in sweep.cells)
    k = next((c.summary.k for c in sweep.cells if c.summary.k is not None), None)
    table = _table(f"sweep over {over}: cells")
    table.add_column(over, no_wrap=True)
    for column in ("n", "mean score (95% CI)" if sweep.confidence == 0.95 else "mean score (CI)", "pass rate",
                   f"pass@{k}" if k else "pass@k", *(["vs baseline"] if compared else []), *(["gate"] if gated else [])):
        table.add_column(column, justify="right" if column in ("n", "pass rate") else "left", no_wrap=True)
    for c in sweep.cells:
        s, ci = c.summary, c.summary.mean_score_ci
        mean = _num(s.mean_score) + (f" ({ci.low:.2f}–{ci.high:.2f})" if ci else "")
        overall = c.comparison.overall if c.comparison else None
        extra = [verdict_cell(overall, bold=False) if overall else "-"] if compared else []
        extra += ["-" if c.gate is None else "passed" if c.gate.passed else "failed"] if gated else []
        table.add_row(names[c.cell], str(s.counts.denominator), mean,
                      "-" if s.pass_rate is None else f"{s.pass_rate:.0%}", _num(s.pass_at_k), *extra)
    return table


def _pairs_parts(sweep: SweepSummary, names: dict[str, str], over: str) -> list[Table | Text]:
    """The pairs table, then one line per pair: which test decided its verdict, or why none could."""
    table = _table(f"sweep over {over}: cells compared pair by pair")
    table.add_column("baseline", no_wrap=True)
    table.add_column("other", no_wrap=True)
    for column in ("pairs", "pass rate", "mean score", "difference (CI)", "verdict"):
        table.add_column(column, justify="right" if column == "pairs" else "left", no_wrap=column != "verdict")
    reasons = []
    for p in sweep.pairwise:
        row = p.overall
        table.add_row(names[p.baseline], names[p.other], str(p.pairs), *_pair_cells(row))
        if row is not None and row.reason:
            reasons.append(f"{names[p.baseline]} → {names[p.other]}: {row.reason}")
    return [table, *(Text(line, style="dim") for line in reasons)]


def _pair_cells(row: PairedRow | None) -> list[str | Text]:
    """Pass rate, mean score, the difference with the interval that decides (none on too few pairs), verdict."""
    if row is None:
        return ["-", "-", "-", Text("no pair")]
    t, s = row.pass_fail, row.score
    passes = "-" if t is None else f"{t.previous_rate:.0%} → {t.current_rate:.0%}"
    means = "-" if s is None else f"{s.previous_mean:.3f} → {s.current_mean:.3f}"
    diff = "-" if s is None else f"{s.difference:+.3f}"
    if s is not None and s.interval is not None and not row.too_few_pairs and not s.note:
        diff += f" ({s.interval.low:+.3f} to {s.interval.high:+.3f})"
    return [passes, means, diff, Text(verdict_cell(row, bold=False), style=VERDICT_STYLE.get(row.verdict, ""))]


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
