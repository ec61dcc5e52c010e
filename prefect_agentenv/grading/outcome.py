"""The task score and outcome, from the run's verifications.

Policy (also in docs/scoring.md):

* Each verifier writes ``metadata.verifications[id] = {score, weight?, skipped?, ...}``.
* The task **score** is the weighted mean of the scores of verifiers that were not skipped
  (weight 1 unless the verifier sets one); ``None`` when nothing was scored.
* The **outcome** is, in order: ``TIMED_OUT`` (the run hit its time limit), ``FAILED`` (a step
  failed the task), ``UNSCORED`` (no verifier produced a score), ``PASSED`` (every scored
  verifier scored 1.0), else ``BELOW_ONE``.
* FAILED and TIMED_OUT runs score 0.0.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any


class Outcome(str, Enum):
    """How a task run ended, from the point of view of grading."""

    PASSED = "PASSED"
    BELOW_ONE = "BELOW_ONE"
    UNSCORED = "UNSCORED"
    FAILED = "FAILED"
    TIMED_OUT = "TIMED_OUT"


def scored_verifications(verifications: Mapping[str, Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """Verifications that count: not skipped and carrying a numeric score."""
    return {
        vid: v
        for vid, v in verifications.items()
        if not v.get("skipped") and isinstance(v.get("score"), int | float)
    }


def task_score(verifications: Mapping[str, Mapping[str, Any]]) -> float | None:
    """Weighted mean of the scored verifiers' scores, or None when none scored."""
    scored = scored_verifications(verifications)
    total_weight = sum(float(v.get("weight", 1.0)) for v in scored.values())
    if not scored or total_weight <= 0:
        return None
    return sum(float(v["score"]) * float(v.get("weight", 1.0)) for v in scored.values()) / total_weight


def task_outcome(
    verifications: Mapping[str, Mapping[str, Any]], *, failed: bool, timed_out: bool = False
) -> tuple[Outcome, float | None]:
    """The outcome and score of a task run."""
    if timed_out:
        return Outcome.TIMED_OUT, 0.0
    if failed:
        return Outcome.FAILED, 0.0
    scored = scored_verifications(verifications)
    score = task_score(verifications)
    if score is None:
        return Outcome.UNSCORED, None
    if all(float(v["score"]) >= 1.0 for v in scored.values()):
        return Outcome.PASSED, score
    return Outcome.BELOW_ONE, score
