"""Charts as inline SVG, drawn here in Python: no script, no library, nothing fetched.

Each chart is ``<svg class="chart" data-chart=NAME data-marks=N>`` whose data marks (bars,
points) carry ``class="mark"`` and ``data-label``/``data-value``, so a test (or a reader's
tools) can check a chart against the numbers it was drawn from.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from html import escape

from prefect_agentenv.transcript.models import StepRun
from prefect_agentenv.viewer.models import ScoreBar, TrendPoint

_WIDTH = 640
_LABEL_W = 170
_ROW_H = 22


def _svg(name: str, marks: int, height: int, body: list[str], title: str) -> str:
    return (f'<svg class="chart" data-chart="{name}" data-marks="{marks}" role="img" '
            f'viewBox="0 0 {_WIDTH} {height}" width="{_WIDTH}" height="{height}" '
            f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>{"".join(body)}</svg>')


def _axis_ticks(x0: float, width: float, y0: float, y1: float, ticks: Sequence[float], fmt: str) -> list[str]:
    out = []
    for t in ticks:
        x = x0 + t * width
        out.append(f'<line class="grid" x1="{x:.1f}" y1="{y0}" x2="{x:.1f}" y2="{y1}"/>'
                   f'<text class="tick" x="{x:.1f}" y="{y1 + 12}" text-anchor="middle">{fmt.format(t)}</text>')
    return out


def score_bars(bars: Sequence[ScoreBar]) -> str:
    """Horizontal bars of mean score per tag and axis, with their confidence intervals as whiskers."""
    if not bars:
        return '<p class="empty">No tag or axis scores.</p>'
    plot_w = _WIDTH - _LABEL_W - 60
    height = 20 + len(bars) * _ROW_H + 20
    body = _axis_ticks(_LABEL_W, plot_w, 10, height - 20, [0, 0.25, 0.5, 0.75, 1], "{:.2f}")
    for i, bar in enumerate(bars):
        y = 14 + i * _ROW_H
        label = f"{bar.kind}: {bar.label}"
        body.append(f'<text class="label" x="{_LABEL_W - 6}" y="{y + 12}" text-anchor="end">{escape(label)}</text>')
        body.append(f'<rect class="mark bar {bar.kind}" data-label="{escape(label)}" data-value="{bar.mean:.4f}" '
                    f'x="{_LABEL_W}" y="{y}" width="{max(0.5, bar.mean * plot_w):.1f}" height="{_ROW_H - 8}">'
                    f'<title>{escape(label)}: {bar.mean:.3f} (n={bar.n}){_ci_text(bar)}</title></rect>')
        if bar.low is not None and bar.high is not None:
            x1, x2, yc = _LABEL_W + bar.low * plot_w, _LABEL_W + bar.high * plot_w, y + (_ROW_H - 8) / 2
            body.append(f'<path class="ci" data-low="{bar.low:.4f}" data-high="{bar.high:.4f}" '
                        f'd="M{x1:.1f} {yc - 4}v8M{x1:.1f} {yc}H{x2:.1f}M{x2:.1f} {yc - 4}v8"/>')
        body.append(f'<text class="value" x="{_LABEL_W + plot_w + 6}" y="{y + 12}">{bar.mean:.2f}</text>')
    return _svg("scores", len(bars), height, body, "Mean score by tag and axis, with confidence intervals")


def _ci_text(bar: ScoreBar) -> str:
    return "" if bar.low is None or bar.high is None else f", interval [{bar.low:.3f}, {bar.high:.3f}]"


def duration_bars(durations: Sequence[tuple[str, float]], name: str = "durations",
                  title: str = "Mean duration per step type (s)") -> str:
    """Horizontal bars of seconds per label (step type, or step)."""
    if not durations:
        return '<p class="empty">No step durations.</p>'
    longest = max(d for _, d in durations) or 1.0
    plot_w = _WIDTH - _LABEL_W - 70
    height = 20 + len(durations) * _ROW_H
    body = []
    for i, (label, seconds) in enumerate(durations):
        y = 10 + i * _ROW_H
        body.append(f'<text class="label" x="{_LABEL_W - 6}" y="{y + 12}" text-anchor="end">{escape(label)}</text>')
        body.append(f'<rect class="mark bar" data-label="{escape(label)}" data-value="{seconds:.4f}" '
                    f'x="{_LABEL_W}" y="{y}" width="{max(0.5, seconds / longest * plot_w):.1f}" '
                    f'height="{_ROW_H - 8}"><title>{escape(label)}: {seconds:.2f} s</title></rect>')
        body.append(f'<text class="value" x="{_LABEL_W + plot_w + 6}" y="{y + 12}">{seconds:.2f} s</text>')
    return _svg(name, len(durations), height, body, title)


def step_timeline(steps: Sequence[StepRun]) -> str:
    """Each step of one run as a bar from its start to its end: what ran in parallel, what took long."""
    timed = [s for s in steps if s.started_at and s.duration_s is not None]
    if not timed:
        return '<p class="empty">No step timings.</p>'
    starts = [_seconds(s.started_at or "") for s in timed]
    t0 = min(starts)
    end = max(st - t0 + (s.duration_s or 0) for st, s in zip(starts, timed)) or 1.0
    plot_w = _WIDTH - _LABEL_W - 70
    height = 20 + len(timed) * _ROW_H + 20
    body = _axis_ticks(_LABEL_W, plot_w, 6, height - 20, [0, 0.5, 1], "{:.0%}")
    for i, (st, s) in enumerate(zip(starts, timed)):
        y = 10 + i * _ROW_H
        x = _LABEL_W + (st - t0) / end * plot_w
        body.append(f'<text class="label" x="{_LABEL_W - 6}" y="{y + 12}" text-anchor="end">{escape(s.id)}</text>')
        body.append(f'<rect class="mark bar state-{escape(s.state)}" data-label="{escape(s.id)}" '
                    f'data-value="{s.duration_s:.4f}" x="{x:.1f}" y="{y}" '
                    f'width="{max(0.5, (s.duration_s or 0) / end * plot_w):.1f}" height="{_ROW_H - 8}">'
                    f'<title>{escape(s.id)} ({escape(s.type)}, {escape(s.state)}): {s.duration_s:.2f} s</title></rect>')
        body.append(f'<text class="value" x="{_LABEL_W + plot_w + 6}" y="{y + 12}">{s.duration_s:.2f} s</text>')
    return _svg("timeline", len(timed), height, body, f"Steps over the run's {end:.1f} s")


def trend_lines(points: Sequence[TrendPoint]) -> str:
    """Mean score and pass rate over the benchmark's runs; flagged regressions drawn as red rings."""
    if not points:
        return '<p class="empty">No finished runs of this benchmark yet.</p>'
    left, top, plot_w, plot_h = 40, 12, _WIDTH - 60, 160
    step = plot_w / max(1, len(points) - 1)
    body = [f'<line class="grid" x1="{left}" y1="{top + plot_h * (1 - v):.1f}" x2="{left + plot_w}" '
            f'y2="{top + plot_h * (1 - v):.1f}"/><text class="tick" x="{left - 4}" y="{top + plot_h * (1 - v) + 4:.1f}" '
            f'text-anchor="end">{v:.1f}</text>' for v in (0, 0.5, 1)]
    marks = 0
    for series, css in (("mean_score", "mean"), ("pass_rate", "rate")):
        coords = [(left + i * step if len(points) > 1 else left + plot_w / 2, getattr(p, series), p)
                  for i, p in enumerate(points)]
        known = [(x, top + plot_h * (1 - v), p) for x, v, p in coords if v is not None]
        if len(known) > 1:
            body.append(f'<polyline class="line {css}" points="{" ".join(f"{x:.1f},{y:.1f}" for x, y, _ in known)}"/>')
        for x, y, p in known:
            marks += 1
            value = getattr(p, series)
            flags = (" regression" if p.regression else "") + (" current" if p.current else "")
            body.append(f'<circle class="mark point {css}{flags}" data-label="{escape(p.run_id)}" '
                        f'data-series="{series}" data-value="{value:.4f}" cx="{x:.1f}" cy="{y:.1f}" '
                        f'r="{6 if p.regression else 4}"><title>{escape(p.run_id)}: {series.replace("_", " ")} '
                        f'{value:.3f}{" — regression flagged" if p.regression else ""}</title></circle>')
    for i, p in enumerate(points):
        x = left + i * step if len(points) > 1 else left + plot_w / 2
        anchor = "end" if i == len(points) - 1 and len(points) > 1 else "start" if i == 0 and len(points) > 1 \
            else "middle"
        body.append(f'<text class="tick run" x="{x:.1f}" y="{top + plot_h + 14}" text-anchor="{anchor}">'
                    f'{escape(p.started_at[5:16].replace("T", " "))}</text>')
    legend = ('<text class="legend mean" x="50" y="8">● mean score</text>'
              '<text class="legend rate" x="160" y="8">● pass rate</text>'
              '<text class="legend regression" x="260" y="8">◯ regression flagged</text>')
    return _svg("trend", marks, top + plot_h + 24, [legend, *body], "Mean score and pass rate per run")


def _seconds(iso: str) -> float:
    try:
        return datetime.fromisoformat(iso).timestamp()
    except ValueError:
        return 0.0
