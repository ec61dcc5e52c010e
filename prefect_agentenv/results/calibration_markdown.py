"""A calibration as markdown: per judge setup, each judge and the panel against the human labels."""

from __future__ import annotations

from collections.abc import Sequence

from prefect_agentenv.results.agreement import AgreementStats
from prefect_agentenv.results.calibration import CalibrationRecord, JudgeCalibration
from prefect_agentenv.results.intervals import Interval

__all__ = ["calibration_markdown"]

_HEAD = ["| judge | labels | agreement | κ | TPR | TNR | unscored |", "|---|---|---|---|---|---|---|"]


def calibration_markdown(records: Sequence[CalibrationRecord]) -> str:
    """Every setup's table (judges, then the panel), its per-criterion table, and reviewer agreement."""
    if not records:
        return "No labelled criterion matches a judged criterion of this run: nothing to calibrate.\n"
    lines: list[str] = []
    for record in records:
        judges = ", ".join(f"{j.id} ({j.model or 'unknown model'})" for j in record.setup.judges)
        lines += [f"## Judge setup `{record.fingerprint}`", "",
                  f"{judges}; rule {record.setup.panel_rule}; criteria `{record.setup.criteria}`; "
                  f"verifiers {', '.join(record.verifiers)}; {record.labels} labels"
                  + (f" ({record.tied} left out: reviewers split evenly)" if record.tied else ""), ""]
        lines += _HEAD + [_line(j.judge, j.overall) for j in [*record.judges, record.panel]] + [""]
        lines += ["Per criterion (the panel):", "", *_HEAD]
        lines += [_line(cid, stats) for cid, stats in record.panel.criteria.items()] + [""]
        lines += _per_judge_criteria(record.judges)
        reviewers = record.reviewers
        if reviewers.pairs is not None:
            lines += [f"Reviewers ({', '.join(reviewers.reviewers)}) agree on {_pct(reviewers.pairs.agreement)} of "
                      f"{reviewers.pairs.n} label pairs over {reviewers.items} items, κ {_num(reviewers.pairs.kappa)}.", ""]
        else:
            lines += [f"Reviewers: {', '.join(reviewers.reviewers)} (no item labelled twice: no agreement between "
                      "reviewers to report).", ""]
    return "\n".join(lines)


def _per_judge_criteria(judges: Sequence[JudgeCalibration]) -> list[str]:
    if len(judges) < 2:
        return []
    lines = ["Per criterion and judge:", "", "| criterion | judge | labels | agreement | κ | TPR | TNR | unscored |",
             "|---|---|---|---|---|---|---|---|"]
    for judge in judges:
        for cid, stats in judge.criteria.items():
            lines.append(_line(cid, stats, judge.judge))
    return [*lines, ""]


def _line(name: str, s: AgreementStats, judge: str | None = None) -> str:
    who = f"{name} | {judge}" if judge is not None else name
    return (f"| {who} | {s.n} | {_pct(s.agreement)} | {_num(s.kappa)} | {_rate(s.tpr, s.tpr_interval, s.tpr_n)} | "
            f"{_rate(s.tnr, s.tnr_interval, s.tnr_n)} | {s.unscored} |")


def _rate(value: float | None, interval: Interval | None, n: int) -> str:
    if value is None:
        return f"— (n={n})"
    ci = f" [{interval.low:.2f}, {interval.high:.2f}]" if interval is not None else ""
    return f"{value:.2f}{ci} (n={n})"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"
