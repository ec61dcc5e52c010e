"""Verification rows and the aggregators that fold them into one score in [0, 1].

A row is one graded item of a verifier (a rubric criterion, an assertion, a check). Its
``score`` is in [0, 1] (1 = the criterion holds), its ``weight`` says how much it counts, and
a **negative weight marks a penalty**: the criterion describes something the agent should
not do, so the row *passing* (the bad thing happened) costs points.

Rows with weight 0 are informational: they are recorded but no aggregator counts them.

The row model, :class:`~prefect_agentenv.context.VerificationRow`, lives with the run context
(every layer that carries rows shares it) and is re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from prefect_agentenv.context import Aggregator, RowResult, VerificationRow

__all__ = ["Aggregator", "RowResult", "VerificationRow", "aggregate"]


def aggregate(rows: Sequence[VerificationRow | Mapping[str, Any]], aggregator: Aggregator = "all_pass") -> float:
    """Fold rows into one score in [0, 1].

    With ``P`` the rows of positive weight and ``N`` those of negative weight (weight-0 rows
    are ignored by every aggregator):

    * ``all_pass``: 1.0 when every row of ``P`` passed and no penalty of ``N`` applies (none
      passed or scored above 0), else 0.0.
    * ``any_pass``: 1.0 when at least one row of ``P`` passed and no penalty of ``N`` applies,
      else 0.0 — a penalty that applies, even partly, disqualifies whatever else passed.
    * ``weighted_average``::

          W     = sum(w_i for i in P)
          gain  = sum(w_i * s_i for i in P)
          loss  = sum(|w_i| * s_i for i in N)
          score = clamp((gain - loss) / W, 0, 1)        when W > 0
          score = clamp(1 - loss, 0, 1)                  when W == 0 (penalties only)

      where ``s_i`` is the row's score: penalties are subtracted from the weighted sum of the
      positive rows (as a fraction of the positive total, so a penalty of weight 1 against
      two criteria of weight 1 costs half the score), and the result is clamped to [0, 1].

    No counted row at all (an empty list, or only weight-0 rows) scores 0.0: nothing was shown
    to hold.

    Args:
        rows: the rows, as models or as the dicts stored in ``metadata.verifications``.
        aggregator: ``all_pass`` (the default of rubric and outcome verifiers), ``any_pass`` or
            ``weighted_average``.

    Raises:
        ValueError: an unknown aggregator, or a row that is not a valid verification row.
    """
    parsed = [row if isinstance(row, VerificationRow) else VerificationRow.model_validate(row) for row in rows]
    positive = [row for row in parsed if row.weight > 0]
    negative = [row for row in parsed if row.weight < 0]
    if not positive and not negative:
        return 0.0
    penalised = any(row.passed or row.score > 0 for row in negative)
    if aggregator == "all_pass":
        return 1.0 if all(row.passed for row in positive) and not penalised else 0.0
    if aggregator == "any_pass":
        return 1.0 if any(row.passed for row in positive) and not penalised else 0.0
    if aggregator == "weighted_average":
        total = sum(row.weight for row in positive)
        loss = sum(-row.weight * row.score for row in negative)
        if total > 0:
            gain = sum(row.weight * row.score for row in positive)
            return _clamp((gain - loss) / total)
        return _clamp(1.0 - loss)
    raise ValueError(f"unknown aggregator {aggregator!r}: use all_pass, any_pass or weighted_average")


def _clamp(value: float) -> float:
    return min(1.0, max(0.0, value))
