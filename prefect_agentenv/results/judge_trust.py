"""How far a run's rubric scores can be trusted, from their judge setups' calibrations.

Every rubric score of a task run carries its setup's trust (``TaskResult.judges``): calibrated
against human labels (with the labels' count and κ), uncalibrated, or stale (calibrated under
a setup that has since changed). :func:`trust_summary` counts them for a run's summary, and
:func:`judge_gate` is the ``--require-calibrated-judge K`` check: a run whose rubric scores
rest on a setup that is uncalibrated, stale, or calibrated below κ ``K`` fails it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from prefect_agentenv.results.rows import RubricTrust, StatsModel, TaskResult, latest_per_run_key

__all__ = ["JUDGE_GATE_EXIT_CODE", "JudgeTrustSummary", "judge_gate", "trust_summary"]

JUDGE_GATE_EXIT_CODE = 6
"""The exit code of ``prefect-agentenv bench --require-calibrated-judge`` when a score's judge falls short."""


class JudgeTrustSummary(StatsModel):
    """A run's rubric scores by the trust their judge setups have earned."""

    rubric_scores: int
    """Judged rubric scores over the run's task runs."""
    calibrated: int
    uncalibrated: int
    stale: int
    """Scores whose verifier was calibrated under another setup since changed."""
    lowest_kappa: float | None = None
    """The lowest κ among the calibrated setups."""
    setups: int
    """Distinct judge setups (fingerprints) behind the scores."""
    mean_disagreement: float | None = None
    """Over the task runs graded by a panel, the mean of the panel's disagreement."""
    unscored_criteria: int = 0
    """Criteria no judge could grade readably, over every task run."""

    def sentence(self) -> str:
        """One line for summaries: how many scores rest on calibrated judges, and the weakest κ."""
        parts = [f"{self.calibrated} of {self.rubric_scores} rubric scores rest on calibrated judge setups"]
        if self.lowest_kappa is not None:
            parts.append(f"lowest κ {self.lowest_kappa:.2f}")
        if self.uncalibrated:
            parts.append(f"**{self.uncalibrated} uncalibrated**")
        if self.stale:
            parts.append(f"**{self.stale} stale** (the judge setup changed since its calibration)")
        if self.mean_disagreement is not None:
            parts.append(f"panel disagreement {self.mean_disagreement:.2f}")
        if self.unscored_criteria:
            parts.append(f"**{self.unscored_criteria} criteria unscored** (no judge's answer could be read)")
        return "; ".join(parts)


def _scores(results: Iterable[TaskResult]) -> list[tuple[TaskResult, RubricTrust]]:
    """Every judged rubric verification of the runs (one result per run key), with its run."""
    return [(run, trust) for run in latest_per_run_key(list(results)) for trust in run.judges]


def trust_summary(results: Iterable[TaskResult]) -> JudgeTrustSummary | None:
    """The run's rubric scores by trust; None when no task run has a judged rubric score."""
    every = [trust for _, trust in _scores(results)]
    if not every:
        return None
    scores = [t for t in every if t.scored]
    kappas = [t.kappa for t in scores if t.calibrated and t.kappa is not None]
    disagreements = [t.disagreement for t in every if t.disagreement is not None]
    return JudgeTrustSummary(
        rubric_scores=len(scores), calibrated=sum(t.calibrated for t in scores),
        uncalibrated=sum(not t.calibrated and not t.stale for t in scores), stale=sum(t.stale for t in scores),
        lowest_kappa=min(kappas) if kappas else None, setups=len({t.fingerprint for t in scores}),
        mean_disagreement=sum(disagreements) / len(disagreements) if disagreements else None,
        unscored_criteria=sum(t.unscored for t in every))


def judge_gate(results: Iterable[TaskResult], min_kappa: float) -> str | None:
    """Why the run's rubric scores do not meet ``min_kappa``, in one line; None when every one does."""
    short = [(run, trust) for run, trust in _scores(results)
             if trust.scored and (not trust.calibrated or trust.kappa is None or trust.kappa < min_kappa)]
    if not short:
        return None
    named = Counter(f"{trust.verifier_id}: {trust.mark()}" for _, trust in short)
    shown = "; ".join(f"{name} ×{count}" for name, count in sorted(named.items())[:3])
    shown += f"; and {len(named) - 3} more" if len(named) > 3 else ""
    return (f"{len(short)} rubric score(s) rest on a judge setup that is not calibrated to κ {min_kappa:g} "
            f"({shown})")
