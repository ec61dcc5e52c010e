"""A sweep in the HTML report: a table of its cells, a table of every two cells compared, and the
trend of each cell over the benchmark's runs."""

from __future__ import annotations

from html import escape

from prefect_agentenv.results import CellPair, CellSummary, SweepSummary
from prefect_agentenv.results.comparison.compare_markdown import verdict_cell
from prefect_agentenv.viewer.charts import trend_lines
from prefect_agentenv.viewer.models import TrendPoint


def sweep_section(sweep: SweepSummary) -> list[str]:
    """The cells (mean and interval, pass rate, pass@k, comparison with the baseline, gate) and the pairs."""
    head = ("<thead><tr><th>cell</th><th>n</th><th>mean score</th><th>pass rate</th><th>pass@k</th>"
            "<th>vs baseline</th><th>gate</th></tr></thead>")
    body = ["<h2>Sweep cells</h2>",
            f'<table id="cells">{head}<tbody>{"".join(_cell_row(c) for c in sweep.cells)}</tbody></table>']
    if sweep.pairwise:
        head = ("<thead><tr><th>baseline cell</th><th>other cell</th><th>pairs</th><th>pass rate</th>"
                "<th>McNemar</th><th>mean score</th><th>difference (CI)</th><th>sign test</th>"
                "<th>verdict</th></tr></thead>")
        body += ["<h2>Cells compared pair by pair</h2>",
                 f'<table id="cell-pairs">{head}<tbody>{"".join(_pair_row(p) for p in sweep.pairwise)}</tbody></table>',
                 '<p class="muted">Paired by task, seed and epoch: pass/fail by McNemar\'s test, scores by a paired '
                 "bootstrap and the sign test together.</p>",
                 '<ul class="muted" id="cell-pair-reasons">' + "".join(
                     f"<li>{escape(p.baseline)} → {escape(p.other)}: {escape(p.overall.reason)}</li>"
                     for p in sweep.pairwise if p.overall is not None and p.overall.reason) + "</ul>"]
    return body


def cell_trends(points: list[TrendPoint]) -> list[str]:
    """One trend chart per cell, in the order the cells first appear."""
    cells = list(dict.fromkeys(p.cell for p in points))
    out = []
    for cell in cells:
        out += [f'<h3 class="trend-cell">cell <code>{escape(cell or "")}</code></h3>',
                trend_lines([p for p in points if p.cell == cell])]
    return out


def _cell_row(c: CellSummary) -> str:
    s = c.summary
    mean = "—" if s.mean_score is None else f"{s.mean_score:.3f}"
    if s.mean_score_ci is not None:
        mean += f' <span class="muted">[{s.mean_score_ci.low:.3f}, {s.mean_score_ci.high:.3f}]</span>'
    rate = "—" if s.pass_rate is None else f"{s.pass_rate:.0%}"
    if s.pass_rate_ci is not None:
        rate += f' <span class="muted">[{s.pass_rate_ci.low:.0%}, {s.pass_rate_ci.high:.0%}]</span>'
    pass_k = "—" if s.k is None or s.pass_at_k is None else f"pass@{s.k} {s.pass_at_k:.2f}"
    overall = c.comparison.overall if c.comparison else None
    versus = "—" if overall is None else escape(verdict_cell(overall, bold=False))
    gate = "—" if c.gate is None else ("passed" if c.gate.passed else '<b class="o-FAILED">failed</b>')
    return (f'<tr data-cell="{escape(c.cell)}"><td><code>{escape(c.cell)}</code></td>'
            f'<td class="num">{s.counts.denominator}</td><td class="num">{mean}</td><td class="num">{rate}</td>'
            f"<td>{pass_k}</td><td>{versus}</td><td>{gate}</td></tr>")


def _pair_row(p: CellPair) -> str:
    cells = f"<td><code>{escape(p.baseline)}</code></td><td><code>{escape(p.other)}</code></td>"
    row = p.overall
    if row is None:
        return f'<tr>{cells}<td class="num">{p.pairs}</td><td colspan="6">no task run in both cells</td></tr>'
    t, s = row.pass_fail, row.score
    passes = f"<td>{t.previous_rate:.0%} → {t.current_rate:.0%}</td><td>p={t.p_value:.2g}</td>" if t else "<td></td>" * 2
    scores = ""
    if s is not None:
        # No interval on too few pairs, and the note beside one that did not decide the verdict.
        ci = f" [{s.interval.low:+.3f}, {s.interval.high:+.3f}]" if s.interval and not row.too_few_pairs else ""
        ci += f' <span class="muted">{escape(s.note)}</span>' if s.note and not row.too_few_pairs else ""
        scores = (f"<td>{s.previous_mean:.3f} → {s.current_mean:.3f}</td><td>{s.difference:+.3f}{ci}</td>"
                  f"<td>p={s.p_value:.2g}</td>")
    kind = "few" if row.too_few_pairs else row.verdict
    verdict = f'<td class="verdict v-{escape(kind)}">{escape(verdict_cell(row, bold=False))}</td>'
    return f'<tr>{cells}<td class="num">{row.pairs}</td>{passes}{scores or "<td></td>" * 3}{verdict}</tr>'
