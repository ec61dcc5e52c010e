"""The paired comparison as markdown (the summary artifact's section, ``prefect-agentenv compare``)
and as one sentence per row (regressions, the gate's reason)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prefect_agentenv.results.comparison.verdicts import TOO_FEW
from prefect_agentenv.results.stats.intervals import Interval
from prefect_agentenv.results.stats.summary_markdown import cell, percentage

if TYPE_CHECKING:
    from prefect_agentenv.results.comparison.compare import Comparison, PairedRow, PassFailTest, ScoreTest

_VERDICT = {"worse": "**worse**", "better": "**better**", "tied": "tied"}


def row_label(row: PairedRow) -> str:
    """``all task runs``, ``tag mail``, ``axis correctness``, ``task reply [seed 0]``, ``task reply[seed=2]``."""
    if row.kind == "overall":
        return "all task runs"
    if row.kind == "task":
        # A seeded task's id already says its seed (``reply[seed=2]``).
        seeded = row.seed_index is None or f"[seed={row.seed_index}]" in row.name
        return f"task {row.name}" if seeded else f"task {row.name} [seed {row.seed_index}]"
    return f"{row.kind} {row.name}"


def row_sentence(row: PairedRow) -> str:
    """The row's label, then what its tests found (the tests that decided it, when it is not tied)."""
    parts = []
    if row.pass_fail is not None and (row.verdict == "tied" or row.pass_fail.verdict == row.verdict):
        parts.append(pass_fail_text(row.pass_fail, row.pairs))
    if row.score is not None and (row.verdict == "tied" or row.score.verdict == row.verdict):
        parts.append(score_text(row.score, row))
    if row.too_few_pairs:
        return f"{row_label(row)}: {TOO_FEW} ({row.pairs} of the {row.min_pairs} pairs a test needs): " + "; ".join(parts)
    return f"{row_label(row)} {row.verdict}: " + "; ".join(parts)


def verdict_cell(row: PairedRow, *, bold: bool = True) -> str:
    """The verdict as a row shows it: ``too few pairs to tell`` when no test could decide."""
    if row.too_few_pairs:
        return TOO_FEW
    return _VERDICT[row.verdict] if bold else row.verdict


def shown_interval(test: PassFailTest | ScoreTest, row: PairedRow, *, percent: bool = False, bare: bool = False) -> str:
    """The test's interval as the row shows it: none when the row has too few pairs, and with the
    test's note when the interval alone would say otherwise than the verdict."""
    if row.too_few_pairs or test.interval is None:
        return ""
    text = _bare_interval(test.interval) if bare else interval_text(test.interval, percent=percent)
    if test.note:
        text = f"{text[:-1]}; {test.note})" if bare else f"{text} — {test.note}"
    return text


def pass_fail_text(test: PassFailTest, pairs: int) -> str:
    return (f"pass rate {percentage(test.previous_rate)} → {percentage(test.current_rate)} over {pairs} pairs "
            f"({test.lost} lost, {test.gained} gained; McNemar {test.method} {p_text(test.p_value)})")


def score_text(test: ScoreTest, row: PairedRow | None = None) -> str:
    interval = interval_text(test.interval) if row is None else shown_interval(test, row)
    return (f"mean score {test.previous_mean:.3f} → {test.current_mean:.3f} "
            f"({test.difference:+.3f}{interval}; sign test {p_text(test.p_value)})")


def comparison_markdown(comparison: Comparison) -> str:
    """The section: setup, what was paired, the overall rows, then tags, axes and changed tasks."""
    baseline = f"run `{comparison.previous_run_id}`" if comparison.previous_run_id else "the baseline run"
    setup = comparison.setup
    lines = [f"## Compared with {baseline}", "",
             ("**Setup differs:** " if setup.known and setup.differences else "Setup: ") + _setup_text(comparison),
             "", _pairing_text(comparison), ""]
    if comparison.overall is None:
        return "\n".join([*lines, "No task run is in both runs: nothing to compare."])
    lines += ["| | pairs | baseline | this run | difference (CI) | test | verdict |", "|---|---|---|---|---|---|---|"]
    lines += _test_lines("pass rate", "mean score", comparison.overall)
    if comparison.overall.reason:
        lines += ["", f"Verdict: {comparison.overall.reason}."]
    regressions = comparison.regressions
    level = percentage(comparison.confidence)
    lines += [""] + ([f"**{len(regressions)} regression(s) at {level} confidence:**", ""] + [f"- {r}" for r in regressions]
                     if regressions else [f"No regression at {level} confidence."])
    lines += _breakdown("By tag", comparison.by_tag)
    lines += _breakdown("By axis", comparison.by_axis)
    changed = [r for r in comparison.by_task if _changed(r)]
    if comparison.by_task:
        lines += _breakdown("Tasks that changed", changed,
                            note=f"{len(comparison.by_task) - len(changed)} of {len(comparison.by_task)} paired tasks "
                                 "did not change (same pass/fail and score in every pair).")
    lines += ["", f"*Pairs matched by task, seed and epoch; pass/fail by McNemar's test, scores by a paired "
                  f"bootstrap ({comparison.resamples} resamples, seed {comparison.seed}) and the sign test together; "
                  f"{level} confidence. A row with fewer pairs than a test needs to reach it reads "
                  f"\"{TOO_FEW}\".*"]
    return "\n".join(lines)


def _setup_text(comparison: Comparison) -> str:
    setup = comparison.setup
    if setup.known and setup.differences:
        return "; ".join(d.sentence() for d in setup.differences)
    return setup.sentence()


def _pairing_text(c: Comparison) -> str:
    return (f"Paired: {c.pairs} task runs in both runs (matched by task, seed and epoch); {c.only_current} only in "
            f"this run, {c.only_previous} only in the baseline, {c.unscored} left out as UNSCORED. Tasks shared: "
            f"{c.tasks_shared} ({c.tasks_current} in this run, {c.tasks_previous} in the baseline).")


def _test_lines(pass_label: str, score_label: str, row: PairedRow) -> list[str]:
    lines = []
    if row.pass_fail is not None:
        t = row.pass_fail
        lines.append(f"| {pass_label} | {row.pairs} | {percentage(t.previous_rate)} | {percentage(t.current_rate)} | "
                     f"{t.difference * 100:+.1f} pt{shown_interval(t, row, percent=True)} | McNemar {t.method} "
                     f"{p_text(t.p_value)} ({t.lost} lost, {t.gained} gained) | {_test_verdict(t, row)} |")
    if row.score is not None:
        s = row.score
        lines.append(f"| {score_label} | {row.pairs} | {s.previous_mean:.3f} | {s.current_mean:.3f} | "
                     f"{s.difference:+.3f}{shown_interval(s, row)} | sign test {p_text(s.p_value)} | "
                     f"{_test_verdict(s, row)} |")
    return lines


def _test_verdict(test: PassFailTest | ScoreTest, row: PairedRow) -> str:
    return TOO_FEW if row.too_few_pairs else _VERDICT[test.verdict]


def _breakdown(title: str, rows: list[PairedRow], *, note: str | None = None) -> list[str]:
    """One line per row: pass rate and McNemar (not for axes), then score, its interval and the sign test."""
    if not rows and note is None:
        return []
    lines = ["", f"### {title}", ""] + ([note, ""] if note else [])
    if not rows:
        return lines
    lines += ["| | pairs | pass rate | lost / gained | McNemar | mean score | difference (CI) | sign test | verdict |",
              "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        t, s = row.pass_fail, row.score
        passes = (f"{percentage(t.previous_rate)} → {percentage(t.current_rate)} | {t.lost} / {t.gained} | "
                  f"{p_text(t.p_value)}") if t else "— | — | —"
        scores = (f"{s.previous_mean:.3f} → {s.current_mean:.3f} | {s.difference:+.3f}"
                  f"{shown_interval(s, row, bare=True)} | {p_text(s.p_value)}") if s else "— | — | —"
        lines.append(f"| {cell(row_label(row))} | {row.pairs} | {passes} | {scores} | {verdict_cell(row)} |")
    return lines


def _bare_interval(interval: Interval | None) -> str:
    return "" if interval is None else f" ({interval.low:+.3f} to {interval.high:+.3f})"


def _changed(row: PairedRow) -> bool:
    moved = row.pass_fail is not None and (row.pass_fail.lost or row.pass_fail.gained)
    return bool(moved) or (row.score is not None and row.score.difference != 0) or row.verdict != "tied"


def interval_text(interval: Interval | None, *, percent: bool = False) -> str:
    if interval is None:
        return ""
    level = percentage(interval.confidence)
    if percent:
        return f", {level} CI {interval.low * 100:+.1f} to {interval.high * 100:+.1f} pt"
    return f", {level} CI {interval.low:+.3f} to {interval.high:+.3f}"


def p_text(p: float) -> str:
    """``p=0.0078``, ``p=1``, ``p<0.0001``: two significant digits."""
    return "p<0.0001" if p < 0.0001 else f"p={p:.2g}"

