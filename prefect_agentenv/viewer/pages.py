"""The report's pages: ``index.html`` (summary, charts, the table of task runs) and one page per run.

Every page is self-contained: its style and script are inline and it fetches nothing, so the
folder can be opened from disk, served by ``prefect-agentenv view --serve`` or kept in any
object store.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from html import escape
from pathlib import Path
from statistics import fmean

from prefect_agentenv.viewer.assets import CSS, SCRIPT
from prefect_agentenv.viewer.charts import duration_bars, score_bars, step_timeline, trend_lines
from prefect_agentenv.viewer.models import ReportView, TaskRow
from prefect_agentenv.viewer.sweep_html import cell_trends, sweep_section
from prefect_agentenv.viewer.transcript_html import transcript_html

OUTCOMES = ("PASSED", "BELOW_ONE", "UNSCORED", "FAILED", "TIMED_OUT")


def render(view: ReportView) -> dict[str, str]:
    """Every page of the report, by its path inside the report folder."""
    return dict(render_pages(view, view.rows))


def render_pages(view: ReportView, full_rows: Iterable[TaskRow]) -> Iterator[tuple[str, str]]:
    """Each run's page as its row arrives with its transcript, then the index page.

    ``view.rows`` are the index's table and may leave their transcripts out; ``full_rows`` are the
    same rows, each with its transcript, produced one at a time. A report of any number of runs
    then holds one transcript in memory, not all of them.
    """
    durations: dict[str, list[float]] = defaultdict(list)
    for row in full_rows:
        yield row.page, _run_page(view, row)
        _add_durations(durations, row)
    yield "index.html", _index(view, durations)


def write(view: ReportView, folder: Path, attachments: dict[str, bytes] | None = None) -> Path:
    """Write the pages (and the copied records) under ``folder``; return the index page's path."""
    files: dict[str, str | bytes] = {**render(view), **(attachments or {})}
    return write_files(files, folder)


def write_files(files: Mapping[str, str | bytes] | Iterable[tuple[str, str | bytes]], folder: Path) -> Path:
    """Write a rendered report (pages and records, by path inside it, as a mapping or as pairs
    produced one at a time) under ``folder``; return the index page's path."""
    for rel, content in files.items() if isinstance(files, Mapping) else files:
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode() if isinstance(content, str) else content)
    return folder / "index.html"


def _page(title: str, body: str, *, script: bool = False) -> str:
    js = f"<script>{SCRIPT}</script>" if script else ""
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<link rel="icon" href="data:,"><title>{escape(title)}</title><style>{CSS}</style></head>'
            f"<body>{body}{js}</body></html>")


def _linker(view: ReportView, depth: int) -> Callable[[str], str]:
    up = "../" * depth

    def link(url: str) -> str:
        copied = view.attachments.get(url)
        return f"{up}{copied}" if copied else url

    return link


def _num(value: float | None, fmt: str = "{:.3f}") -> str:
    return "—" if value is None else fmt.format(value)


def _cards(view: ReportView) -> str:
    s = view.summary
    if s is None:
        return ""
    ci = f" [{s.mean_score_ci.low:.3f}, {s.mean_score_ci.high:.3f}]" if s.mean_score_ci else ""
    rate_ci = f" [{s.pass_rate_ci.low:.0%}, {s.pass_rate_ci.high:.0%}]" if s.pass_rate_ci else ""
    cards = [("mean score", _num(s.mean_score) + f'<span class="muted">{ci}</span>'),
             ("pass rate", _num(s.pass_rate, "{:.0%}") + f'<span class="muted">{rate_ci}</span>'),
             ("task runs", f"{s.counts.total}"), ("passed", f"{s.counts.passed}"),
             ("errored", f"{s.counts.errored}"), ("unscored", f"{s.counts.unscored}")]
    if s.k:
        cards.append((f"pass@{s.k} / pass^{s.k}", f"{_num(s.pass_at_k, '{:.2f}')} / {_num(s.pass_hat_k, '{:.2f}')}"))
    return '<div class="cards">' + "".join(f'<div class="card"><span class="muted">{escape(label)}</span>'
                                           f"<b>{value}</b></div>" for label, value in cards) + "</div>"


def _index(view: ReportView, durations: Mapping[str, list[float]]) -> str:
    sub = " · ".join(x for x in (view.slug and f"benchmark <code>{escape(view.slug)}</code>",
                                 view.run_id and f"run <code>{escape(view.run_id)}</code>",
                                 f"generated {escape(view.generated_at[:19].replace('T', ' '))} UTC") if x)
    body = [f"<h1>{escape(view.title)}</h1>", f'<p class="muted">{sub}</p>',
            f'<p class="headline">{escape(view.headline)}</p>', _cards(view)]
    if view.regressions:
        body.append('<div class="warn" id="regressions"><b>Regressions: the paired comparison with the baseline '
                    'run</b><ul>' + "".join(f"<li>{escape(r)}</li>" for r in view.regressions) + "</ul></div>")
    if view.sweep is not None:
        body += sweep_section(view.sweep)
    body += _judges(view) + _changes(view)
    body += ["<h2>Task runs</h2>", _filters(view), _table(view)]
    body += ["<h2>Score by tag and axis</h2>", score_bars(view.bars)]
    body += ["<h2>Duration per step type</h2>", duration_bars(_mean_durations(durations))]
    if view.kind == "benchmark" and view.sweep is not None:
        body += ["<h2>Trend of each cell over this benchmark's runs</h2>", *cell_trends(view.trend)]
    elif view.kind == "benchmark":
        body += ["<h2>Trend over this benchmark's runs</h2>", trend_lines(view.trend)]
    return _page(view.title, "\n".join(body), script=True)


def _changes(view: ReportView) -> list[str]:
    """The changes operators made while the run ran, one row each (none: no section)."""
    if not view.changes:
        return []
    rows = "".join(f"<tr><td>{escape(c.at)}</td><td>{escape(c.kind)}</td><td>{escape(c.what)}</td>"
                   f"<td>{escape(_moved(c.old, c.new))}</td><td>{escape(c.by)}</td>"
                   f"<td>{escape(' — '.join(p for p in (c.reason, c.detail) if p))}</td></tr>" for c in view.changes)
    return ['<h2 id="changes">Changes during the run</h2>', '<table class="changes"><thead><tr><th>when (UTC)</th>'
            "<th>change</th><th>setting or task run</th><th>old → new</th><th>by</th><th>why</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>"]


def _moved(old: object, new: object) -> str:
    if old is None and new is None:
        return ""
    shown = ["none" if v is None else str(v).lower() if isinstance(v, bool) else str(v) for v in (old, new)]
    return " → ".join(shown)


def _judges(view: ReportView) -> list[str]:
    """How far the rubric scores can be trusted: marked as a warning when a judge setup is uncalibrated, stale,
    not calibrated or below the gate's κ, or when the mock model judged."""
    trust = view.summary.judges if view.summary is not None else None
    if trust is None:
        return []
    marks = sorted({(r.task_id, mark) for r in view.rows for mark in r.judges})
    items = "".join(f"<li><code>{escape(task)}</code> {escape(mark)}</li>" for task, mark in marks)
    box = "warn" if trust.uncalibrated or trust.stale or trust.not_counted or trust.below or trust.mock else "muted"
    return ["<h2>Judges</h2>", f'<div class="{box}" id="judges"><p>{escape(trust.sentence().replace("**", ""))}</p>'
            f"<ul>{items}</ul></div>"]


def _filters(view: ReportView) -> str:
    tags = sorted({t for r in view.rows for t in r.tags})
    outcomes = [o for o in OUTCOMES if any(r.outcome == o for r in view.rows)]
    opts = lambda values: "".join(f'<option value="{escape(v)}">{escape(v)}</option>' for v in values)  # noqa: E731
    return ('<div class="filters">'
            f'<label>tag <select id="filter-tag"><option value="">all</option>{opts(tags)}</select></label>'
            f'<label>outcome <select id="filter-outcome"><option value="">all</option>{opts(outcomes)}</select></label>'
            '<label>search <input id="filter-text" type="search" placeholder="task, error…"></label>'
            f'<span class="muted"><span id="shown">{len(view.rows)}</span> of {len(view.rows)} shown</span></div>')


def _table(view: ReportView) -> str:
    head = ("<thead><tr><th class=\"sortable\">task</th><th class=\"sortable\" data-type=\"number\">seed</th>"
            "<th class=\"sortable\" data-type=\"number\">epoch</th><th>tags</th><th class=\"sortable\">outcome</th>"
            "<th class=\"sortable\" data-type=\"number\">score</th>"
            "<th class=\"sortable\" data-type=\"number\">duration (s)</th><th>error</th><th>links</th></tr></thead>")
    rows = [_table_row(view, r) for r in view.rows]
    return f'<table id="runs">{head}<tbody>{"".join(rows)}</tbody></table>'


def _table_row(view: ReportView, r: TaskRow) -> str:
    links = [f'<a class="drill" href="{escape(r.page)}">transcript</a>']
    if view.prefect_ui_url and r.prefect_path:
        links.append(f'<a href="{escape(view.prefect_ui_url)}/{escape(r.prefect_path)}">Prefect</a>')
    tags = "".join(f'<span class="tag">{escape(t)}</span>' for t in r.tags)
    score = "" if r.score is None else f"{r.score:.4f}"
    cell = f' <span class="muted cell">{escape(r.cell)}</span>' if r.cell else ""
    return (f'<tr data-task="{escape(r.task_id)}" data-tags="{escape(" ".join(r.tags))}" '
            f'data-outcome="{escape(r.outcome)}"' + (f' data-cell="{escape(r.cell)}"' if r.cell else "") + ">"
            f'<td data-sort="{escape(r.task_id)}"><a href="{escape(r.page)}">{escape(r.task_id)}</a>{cell}</td>'
            f'<td class="num" data-sort="{r.seed_index}">{r.seed_index}</td>'
            f'<td class="num" data-sort="{r.epoch}">{r.epoch}</td><td>{tags}</td>'
            f'<td data-sort="{escape(r.outcome)}" class="outcome o-{escape(r.outcome)}">{escape(r.outcome)}</td>'
            f'<td class="num" data-sort="{score}">{_num(r.score)}</td>'
            f'<td class="num" data-sort="{r.duration_s:.3f}">{r.duration_s:.1f}</td>'
            f'<td>{escape((r.error or "")[:160])}</td><td>{" · ".join(links)}</td></tr>')


def _add_durations(by_type: dict[str, list[float]], row: TaskRow) -> None:
    """Add a run's step durations, by step type, for the index's chart."""
    for step in row.transcript.steps if row.transcript else []:
        if step.duration_s is not None:
            by_type[step.type].append(step.duration_s)


def _mean_durations(by_type: Mapping[str, list[float]]) -> list[tuple[str, float]]:
    return sorted(((t, fmean(v)) for t, v in by_type.items()), key=lambda kv: -kv[1])


def _run_page(view: ReportView, r: TaskRow) -> str:
    link = _linker(view, depth=1)
    title = f"{r.task_id} · seed {r.seed_index} · epoch {r.epoch}" + (f" · {r.cell}" if r.cell else "")
    body = [f'<nav><a id="back" href="../index.html">← {escape(view.title)}</a></nav>', f"<h1>{escape(title)}</h1>",
            f'<p class="headline"><span class="outcome o-{escape(r.outcome)}">{escape(r.outcome)}</span> · score '
            f"{_num(r.score)} · {r.duration_s:.1f} s" + "".join(f' <span class="tag">{escape(t)}</span>' for t in r.tags)
            + "</p>"]
    extra = []
    if r.report_url:
        extra.append(f'<a href="{escape(link(r.report_url))}">report.json</a>')
    if view.prefect_ui_url and r.prefect_path:
        kind = "task run" if r.task_run_id else "flow run"
        extra.append(f'<a href="{escape(view.prefect_ui_url)}/{escape(r.prefect_path)}">{kind} in Prefect</a>')
    if extra:
        body.append(f'<p>{" · ".join(extra)}</p>')
    if r.error:
        body.append(f'<p class="errors">{escape(r.error)}</p>')
    if r.transcript is None:
        body.append('<p class="muted">No transcript: the run ended without a report.</p>')
    else:
        body += ["<h2>Steps</h2>", step_timeline(r.transcript.steps), _steps_table(r),
                 transcript_html(r.transcript, link)]
    return _page(title, "\n".join(body))


def _steps_table(r: TaskRow) -> str:
    assert r.transcript is not None
    rows = "".join(
        f"<tr><td>{escape(s.id)}</td><td>{escape(s.type)}</td><td class=\"o-{'PASSED' if s.state == 'completed' else 'FAILED'}\">"
        f"{escape(s.state)}</td><td class=\"num\">{'' if s.duration_s is None else f'{s.duration_s:.2f}'}</td>"
        f"<td class=\"num\">{s.attempts}</td><td>{escape(s.error or '')}</td></tr>" for s in r.transcript.steps)
    return ("<table class=\"steps\"><thead><tr><th>step</th><th>type</th><th>state</th><th>duration (s)</th>"
            f"<th>attempts</th><th>error</th></tr></thead><tbody>{rows}</tbody></table>")
