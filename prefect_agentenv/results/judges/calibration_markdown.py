"""A calibration as markdown: which run, where the labels are, and per judge setup each judge and the
panel against the human labels, the calibration that held before and whether this one was recorded."""

from __future__ import annotations

from collections.abc import Sequence

from prefect_agentenv.results.judges.agreement import AgreementStats
from prefect_agentenv.results.judges.calibration import CalibrationRecord, JudgeCalibration
from prefect_agentenv.results.judges.calibration_run import CalibrationOutcome
from prefect_agentenv.results.judges.label_pool import plural, where_labels_are
from prefect_agentenv.results.stats.intervals import Interval

__all__ = ["calibration_markdown"]

_HEAD = ["| judge | labels | agreement | κ | TPR | TNR | unscored |", "|---|---|---|---|---|---|---|"]


def calibration_markdown(outcome: CalibrationOutcome) -> str:
    """The run, then every setup's table (judges, then the panel), its per-criterion table, reviewer
    agreement, and what holds."""
    run = f"{outcome.found.slug}/{outcome.found.run_id}"
    lines = [f"# Calibration of {outcome.meant}", ""]
    if outcome.imported:
        lines += [f"{plural(outcome.imported, 'label')} imported on run {run} (a new version of its labels).", ""]
    if not outcome.records:
        lines += ["No label of these criteria matches a judged criterion of this run's judge setups: nothing to "
                  f"calibrate. List what can be labelled with `prefect-agentenv calibrate {run} --template`.", ""]
        return "\n".join(lines)
    for record in outcome.records:
        lines += _setup_lines(record, outcome, run)
    return "\n".join(lines)


def _setup_lines(record: CalibrationRecord, outcome: CalibrationOutcome, run: str) -> list[str]:
    judges = ", ".join(f"{j.id} ({j.model or 'unknown model'})" for j in record.setup.judges)
    lines = [f"## Judge setup `{record.fingerprint}`", "",
             f"{judges}; rule {record.setup.panel_rule}; criteria `{record.setup.criteria}`; "
             f"verifiers {', '.join(record.verifiers)}; {plural(record.labels, 'label')}"
             + (f" ({record.tied} left out: reviewers split evenly)" if record.tied else ""), "",
             where_labels_are(record.sources), ""]
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
    return lines + _holds(record, outcome, run)


def _holds(record: CalibrationRecord, outcome: CalibrationOutcome, run: str) -> list[str]:
    """This calibration's verdict, the one that held before, and whether this one now holds."""
    why = record.shortfall()
    verdict = f"**Not calibrated:** {why}." if why else f"**Calibrated:** κ {record.kappa:.2f} on {plural(record.labels, 'label')}."
    held = outcome.held.get(record.fingerprint)
    before = (f"Before: version {held[0]}, {held[1].brief()}." if held is not None else "Before: never calibrated.")
    version = outcome.recorded.get(record.fingerprint)
    if version is None:
        now = (f"Shown only, not recorded: the calibration that holds is unchanged; record this one with "
               f"`prefect-agentenv calibrate {run} --record`.")
    else:
        now = f"Recorded as `calibration.{record.fingerprint}` version {version}."
        if held is not None and _worse(record, held[1]):
            now += (f" **A demotion** from version {held[0]}: every version stays; re-record from the pool with "
                    f"`prefect-agentenv calibrate {run} --record` once the labels are right.")
    return [verdict, before, now, ""]


def _worse(new: CalibrationRecord, old: CalibrationRecord) -> bool:
    if old.shortfall() is not None or old.kappa is None:
        return False
    return new.shortfall() is not None or new.kappa is None or new.kappa < old.kappa


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
