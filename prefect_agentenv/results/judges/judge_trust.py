"""How far a run's rubric scores can be trusted, from their judge setups' calibrations.

Every rubric score of a task run carries its setup's trust (``TaskResult.judges``): calibrated
against human labels (with the labels' count and κ), not calibrated (a calibration whose κ is
undefined or rests on too few labels of a class), uncalibrated, or stale (calibrated under a
setup that has since changed). :func:`trust_summary` counts them for a run's summary, against the
run's gate when it had one, and :func:`judge_gate` is the ``--require-calibrated-judge K`` check on
the scores: a run whose rubric scores rest on a setup that is not calibrated, stale, or calibrated
below κ ``K`` fails it. (Setups known before a run are checked before it starts:
:mod:`~prefect_agentenv.results.judges.setup_gate`.)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from prefect_agentenv.grading.judge_setup import MOCK_JUDGE_NOTE
from prefect_agentenv.results.judges.label_pool import plural
from prefect_agentenv.results.rows import RubricTrust, StatsModel, TaskResult, latest_per_run_key

__all__ = ["JudgeTrustSummary", "judge_gate", "judge_gate_section", "trust_summary"]


class JudgeTrustSummary(StatsModel):
    """A run's rubric scores by the trust their judge setups have earned."""

    rubric_scores: int
    """Judged rubric scores over the run's task runs."""
    calibrated: int
    """Scores on a calibration that counts (and, with a gate, meets its κ)."""
    uncalibrated: int
    stale: int
    """Scores whose verifier was calibrated under another setup since changed."""
    below: int = 0
    """Scores on a calibration below the gate's κ."""
    not_counted: int = 0
    """Scores on a calibration that does not count (κ undefined, too few labels of a class)."""
    shortfall: str | None = None
    """Why such a calibration does not count (the first one's reason)."""
    required_kappa: float | None = None
    """The κ the run's judge gate asked for (None: no gate)."""
    mock: int = 0
    """Scores graded by the built-in mock model."""
    lowest_kappa: float | None = None
    """The lowest κ among the setups with a calibration that counts."""
    setups: int
    """Distinct judge setups (fingerprints) behind the scores."""
    mean_disagreement: float | None = None
    """Over the task runs graded by a panel, the mean of the panel's disagreement."""
    unscored_criteria: int = 0
    """Criteria no judge could grade readably, over every task run."""

    def sentence(self) -> str:
        """One line for summaries: how many scores rest on calibrated judges (to the gate's κ), and the weakest κ."""
        to = f"judge setups calibrated to the gate's κ {self.required_kappa:g}" if self.required_kappa is not None \
            else "calibrated judge setups"
        parts = [f"{self.calibrated} of {plural(self.rubric_scores, 'rubric score')} rest on {to}"]
        if self.lowest_kappa is not None:
            parts.append(f"lowest κ {self.lowest_kappa:.2f}")
        if self.below:
            parts.append(f"**{self.below} below the gate's κ {self.required_kappa:g}**")
        if self.not_counted:
            parts.append(f"**{self.not_counted} not calibrated: {self.shortfall}**")
        if self.uncalibrated:
            parts.append(f"**{self.uncalibrated} uncalibrated**")
        if self.stale:
            parts.append(f"**{self.stale} stale** (the judge setup changed since its calibration)")
        if self.mean_disagreement is not None:
            parts.append(f"panel disagreement {self.mean_disagreement:.2f}")
        if self.unscored_criteria:
            parts.append(f"**{plural(self.unscored_criteria, 'criterion', 'criteria')} unscored** "
                         "(no judge's answer could be read)")
        if self.mock:
            parts.append(f"**{self.mock} {MOCK_JUDGE_NOTE}**")
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
    required = max((t.required_kappa for t in every if t.required_kappa is not None), default=None)
    kappas = [t.kappa for t in scores if t.calibrated and t.kappa is not None]
    disagreements = [t.disagreement for t in every if t.disagreement is not None]
    short = [t for t in scores if t.shortfall and not t.calibrated]
    return JudgeTrustSummary(
        rubric_scores=len(scores), calibrated=sum(t.meets(required) for t in scores),
        below=sum(t.calibrated and not t.meets(required) for t in scores), not_counted=len(short),
        shortfall=short[0].shortfall if short else None, required_kappa=required,
        uncalibrated=sum(not t.calibrated and not t.stale and not t.shortfall for t in scores),
        stale=sum(t.stale for t in scores), mock=sum(t.mock for t in scores),
        lowest_kappa=min(kappas) if kappas else None, setups=len({t.fingerprint for t in scores}),
        mean_disagreement=sum(disagreements) / len(disagreements) if disagreements else None,
        unscored_criteria=sum(t.unscored for t in every))


def judge_gate(results: Iterable[TaskResult], min_kappa: float) -> str | None:
    """Why the run's rubric scores do not meet ``min_kappa``, in one line; None when every one does."""
    short = [(run, trust.model_copy(update={"required_kappa": min_kappa})) for run, trust in _scores(results)
             if trust.scored and not trust.meets(min_kappa)]
    if not short:
        return None
    named = Counter(f"{trust.verifier_id}: {trust.mark()}" for _, trust in short)
    shown = "; ".join(f"{name} ×{count}" for name, count in sorted(named.items())[:3])
    shown += f"; and {len(named) - 3} more" if len(named) > 3 else ""
    rest = "rests on a judge setup" if len(short) == 1 else "rest on judge setups"
    return f"{plural(len(short), 'rubric score')} {rest} not calibrated to κ {min_kappa:g} ({shown})"


def judge_gate_section(results: Iterable[TaskResult], min_kappa: float | None,
                       before: str | None) -> tuple[str | None, str]:
    """The scores' gate (why it failed, or None) and, when it passed, its paragraph for the run's summary
    (a failure's line is the run's outcome: ``results.run_outcome``); nothing without a gate. ``before``
    is the gate's line on the setups checked before the run started."""
    if min_kappa is None:
        return None, ""
    short = judge_gate(results, min_kappa)
    if short:
        return short, ""
    return None, (f"\n\n**Judge gate passed:** every rubric score rests on a judge setup calibrated to κ {min_kappa:g}"
                  + (f" ({before})" if before else "") + "\n")
