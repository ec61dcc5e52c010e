"""A panel of judges: every judge grades every criterion, and one rule folds their verdicts.

Pure and free of Prefect, so the rubrics_verifier step and calibration read verdicts the same
way. Each judge's readable verdicts come in as rows (its unreadable criteria are simply
missing); :func:`combine_panel` returns, per criterion, one combined row that keeps every
judge's verdict and justification, or marks the criterion unscored when no judge could be read.

Rules, on the judges that answered readably (scores in [0, 1]; a binary verdict is 1 or 0):

* ``majority`` — the lower median score: the verdict most judges gave; a tie fails, since a
  criterion the evidence does not show to be met fails.
* ``unanimous`` — the lowest score: a criterion passes only when every judge passes it.
* ``mean`` — the mean score (partial when the judges split).

Disagreement on a criterion is the share of judge pairs whose verdicts differ (for partial
scores, the mean absolute difference of the pair's scores): 0 when all agree, 2/3 for a panel
of three with one dissenter. A run's disagreement is the mean over its scored criteria.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidatorFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from prefect_agentenv.context import RowResult, VerificationRow

__all__ = ["JudgeRecord", "JudgeVerdict", "PanelCriterion", "PanelOutcome", "PanelRecord", "PanelRule", "combine_panel",
           "pair_disagreement"]

PanelRule = Literal["majority", "unanimous", "mean"]


class JudgeVerdict(BaseModel):
    """One judge's verdict on one criterion, as kept in the combined row's ``judges`` list."""

    model_config = ConfigDict(extra="forbid")

    judge: str
    """The judge's id in the panel."""
    result: RowResult | Literal["unscored"]
    """``pass``, ``fail``, ``partial``, or ``unscored`` when its answer could not be read."""
    score: float | None = None
    """The judge's score in [0, 1]; None when unscored."""
    justification: str | None = None
    """Why the judge decided so (or why its answer could not be read)."""


class PanelCriterion(BaseModel):
    """The panel's result on one criterion: the combined row, or unscored, and every verdict."""

    id: str
    row: VerificationRow | None
    """The combined row; None when no judge gave a readable verdict (unscored)."""
    verdicts: list[JudgeVerdict]
    disagreement: float | None
    """Share of judge pairs that disagree (None with fewer than two readable verdicts)."""


class PanelOutcome(BaseModel):
    """Every criterion's panel result, and the run's figures."""

    criteria: list[PanelCriterion]
    disagreement: float | None
    """Mean disagreement over the criteria two or more judges scored; None when there are none."""
    split_criteria: list[str]
    """Criteria on which the judges did not all agree."""
    unscored: list[str]
    """Criteria no judge could grade readably: neither passed nor failed."""

    @property
    def rows(self) -> list[VerificationRow]:
        return [c.row for c in self.criteria if c.row is not None]


class JudgeRecord(BaseModel):
    """One judge as a verification names it (keys written only when known, in the order written)."""

    model_config = ConfigDict(extra="allow")

    id: str | None = None
    """Its id in a panel (a single judge has none)."""
    mode: str | None = None
    """``model`` (the judge model called directly) or ``agent`` (a judge agent)."""
    model: str | None = None
    mock: bool = False
    """The judge was the built-in mock model: its verdicts say nothing of the work."""
    agent_name: str | None = None
    a2a_agent_id: str | None = None
    files: list[str] | None = None
    """Files the judge agent was given to read."""
    attempts: int | None = None
    """How many answers it was asked for (1 + the corrective retries it needed)."""
    trajectory: str | None = None
    """Where its own trajectory (its prompt and answer) is stored."""
    _order: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _keep_order(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> JudgeRecord:
        record: JudgeRecord = handler(data)
        if isinstance(data, dict) and not record._order:
            record._order = tuple(data)
        return record

    @model_serializer(mode="wrap")
    def _as_written(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The record as the step wrote it: the keys it set, in its order (a record stays byte for byte)."""
        data = handler(self)
        kept = self.model_fields_set | set(self.model_extra or {})
        keys = [k for k in self._order if k in data] + [k for k in data if k not in self._order]
        return {key: data[key] for key in keys if key in kept}


class PanelRecord(BaseModel):
    """What a panel's verification keeps beside its rows, as ``verification.panel``."""

    rule: PanelRule
    judges: list[JudgeRecord] = []
    """Who judged: each judge's description, attempts and trajectory."""
    disagreement: float | None = None
    """The run's disagreement: mean share of judge pairs that disagree, over the scored criteria."""
    split_criteria: list[str] = []
    """Criteria on which the judges did not all agree."""
    unscored: list[str] = []
    """Criteria left unscored: no judge's answer about them could be read."""
    unreadable_judges: list[str] = []
    """Judges whose answer was still unreadable after the corrective retries."""


def pair_disagreement(scores: Sequence[float]) -> float | None:
    """The mean over judge pairs of the difference of their scores (for verdicts 1/0: the share of
    pairs that differ); None with fewer than two scores."""
    pairs = list(itertools.combinations(scores, 2))
    if not pairs:
        return None
    return sum(abs(a - b) for a, b in pairs) / len(pairs)


def combine_panel(criterion_ids: Sequence[str], weights: Mapping[str, float],
                  by_judge: Mapping[str, Mapping[str, VerificationRow]], rule: PanelRule,
                  unreadable: Mapping[str, str] | None = None) -> PanelOutcome:
    """Fold the judges' rows into one row per criterion.

    Args:
        criterion_ids: the criteria, in document order.
        weights: each criterion's weight.
        by_judge: judge id → its readable rows by criterion id (a criterion it left unreadable is missing).
        rule: ``majority``, ``unanimous`` or ``mean``.
        unreadable: judge id → why its answer could not be read, shown as that judge's justification.
    """
    criteria = [_criterion(cid, weights.get(cid, 1.0), by_judge, rule, unreadable or {}) for cid in criterion_ids]
    measured = [c.disagreement for c in criteria if c.disagreement is not None]
    return PanelOutcome(criteria=criteria, disagreement=sum(measured) / len(measured) if measured else None,
                        split_criteria=[c.id for c in criteria if c.disagreement],
                        unscored=[c.id for c in criteria if c.row is None])


def _criterion(cid: str, weight: float, by_judge: Mapping[str, Mapping[str, VerificationRow]], rule: PanelRule,
               unreadable: Mapping[str, str]) -> PanelCriterion:
    verdicts: list[JudgeVerdict] = []
    for judge, rows in by_judge.items():
        row = rows.get(cid)
        if row is None:
            verdicts.append(JudgeVerdict(judge=judge, result="unscored",
                                         justification=unreadable.get(judge, "the judge's answer could not be read")))
        else:
            verdicts.append(JudgeVerdict(judge=judge, result=row.result, score=row.score,
                                         justification=row.justification))
    scores = [v.score for v in verdicts if v.score is not None]
    if not scores:
        return PanelCriterion(id=cid, row=None, verdicts=verdicts, disagreement=None)
    score = _fold(scores, rule)
    result: RowResult = "pass" if score >= 1.0 else "fail" if score <= 0.0 else "partial"
    agreeing = [v for v in verdicts if v.score is not None and v.result == result]
    said = next((v.justification for v in agreeing if v.justification), None)
    justification = f"panel {rule}: {len(agreeing)} of {len(verdicts)} judges say {result}" + (
        f"; {said}" if said else "")
    disagreement = pair_disagreement(scores)
    extra = {} if disagreement is None else {"disagreement": round(disagreement, 4)}
    row = VerificationRow.model_validate({
        "id": cid, "result": result, "score": score, "weight": weight, "justification": justification,
        "judges": [v.model_dump(mode="json", exclude_none=True) for v in verdicts], **extra})
    return PanelCriterion(id=cid, row=row, verdicts=verdicts, disagreement=disagreement)


def _fold(scores: Sequence[float], rule: PanelRule) -> float:
    if rule == "unanimous":
        return min(scores)
    if rule == "mean":
        return sum(scores) / len(scores)
    return statistics.median_low(scores)
