"""How often two graders agree on pass/fail verdicts: agreement, Cohen's κ, TPR and TNR.

Pure statistics over pairs ``(judge verdict, human verdict)``, where ``True`` is a pass and a
judge verdict of ``None`` is an unscored criterion (left out of every figure and counted).
The human is the reference: a *positive* is a criterion the human passed.

* agreement ``p_o = (TP + TN) / n``;
* Cohen's κ ``= (p_o − p_e) / (1 − p_e)`` with chance agreement
  ``p_e = p_judge_pass · p_human_pass + p_judge_fail · p_human_fail``; undefined (``None``)
  when ``p_e = 1`` (both graders gave one verdict only: agreement by chance cannot be told
  from skill);
* TPR ``= TP / (TP + FN)``: of what the human passed, the share the judge passed;
  TNR ``= TN / (TN + FP)``: of what the human failed, the share the judge failed; each with a
  Wilson interval (:func:`~prefect_agentenv.results.stats.intervals.wilson_interval`) and the count it
  rests on.
"""

from __future__ import annotations

from collections.abc import Iterable

from prefect_agentenv.results.rows import StatsModel
from prefect_agentenv.results.stats.intervals import DEFAULT_CONFIDENCE, Interval, wilson_interval

__all__ = ["AgreementStats", "Confusion", "agreement_stats", "cohen_kappa"]


class Confusion(StatsModel):
    """The judge's verdicts against the human's, pass being positive."""

    tp: int = 0
    """Both passed."""
    fp: int = 0
    """The judge passed what the human failed."""
    tn: int = 0
    """Both failed."""
    fn: int = 0
    """The judge failed what the human passed."""

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.tn + self.fn


class AgreementStats(StatsModel):
    """A judge (or a reviewer) against the reference labels, on one criterion or overall."""

    n: int
    """Labelled verdicts the figures rest on (unscored ones left out)."""
    confusion: Confusion
    agreement: float | None
    """Share of verdicts equal to the label."""
    kappa: float | None
    """Cohen's κ; None when chance agreement is 1 (one verdict only on both sides) or n is 0."""
    tpr: float | None
    """Of the criteria the human passed, the share the judge passed."""
    tpr_interval: Interval | None
    tpr_n: int
    """Labels the TPR rests on (human passes)."""
    tnr: float | None
    """Of the criteria the human failed, the share the judge failed."""
    tnr_interval: Interval | None
    tnr_n: int
    """Labels the TNR rests on (human fails)."""
    unscored: int = 0
    """Labelled criteria the judge left unscored: not counted above."""


def cohen_kappa(c: Confusion) -> float | None:
    """Cohen's κ of a 2×2 table (see the module docstring); None when undefined."""
    n = c.n
    if n == 0:
        return None
    observed = (c.tp + c.tn) / n
    judge_pass, human_pass = (c.tp + c.fp) / n, (c.tp + c.fn) / n
    chance = judge_pass * human_pass + (1 - judge_pass) * (1 - human_pass)
    if chance >= 1.0:
        return None
    return (observed - chance) / (1 - chance)


def agreement_stats(pairs: Iterable[tuple[bool | None, bool]], confidence: float = DEFAULT_CONFIDENCE) -> AgreementStats:
    """Figures for ``(judge verdict, human verdict)`` pairs; a judge verdict of None is unscored."""
    c = Confusion()
    unscored = 0
    for judge, human in pairs:
        if judge is None:
            unscored += 1
        elif judge and human:
            c.tp += 1
        elif judge:
            c.fp += 1
        elif human:
            c.fn += 1
        else:
            c.tn += 1
    positives, negatives = c.tp + c.fn, c.tn + c.fp
    return AgreementStats(
        n=c.n, confusion=c, agreement=(c.tp + c.tn) / c.n if c.n else None, kappa=cohen_kappa(c),
        tpr=c.tp / positives if positives else None, tpr_interval=wilson_interval(c.tp, positives, confidence),
        tpr_n=positives, tnr=c.tn / negatives if negatives else None,
        tnr_interval=wilson_interval(c.tn, negatives, confidence), tnr_n=negatives, unscored=unscored)
