"""The task score and outcome, from the run's verifications.

Policy (also in docs/scoring.md):

* Each verifier writes ``metadata.verifications[id] = {score, weight?, skipped?, ...}``.
* The task **score** is the weighted mean of the verifiers' scores (weight 1 unless the verifier
  sets one); ``None`` when nothing was scored. A skipped verifier counts as 0 under the skip
  policy ``zero`` (the default: a run cut off before it could be graded is not a success) and
  is left out under ``exclude``.
* The **outcome** is, in order: ``TIMED_OUT`` (the run hit its time limit), ``FAILED`` (a step
  failed the task), ``UNSCORED`` (no verifier produced a score), ``PASSED`` (every scored
  verifier scored 1.0), else ``BELOW_ONE``.
* FAILED and TIMED_OUT runs score 0.0.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any, Literal

SkipPolicy = Literal["zero", "exclude"]
"""How a skipped verifier counts in the task score: as 0 (``zero``) or not at all (``exclude``)."""


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


def counted_verifications(verifications: Mapping[str, Mapping[str, Any]],
                          skip_policy: SkipPolicy = "zero") -> dict[str, Mapping[str, Any]]:
    """The verifications the task score counts: the scored ones, and the skipped ones at 0 (``zero``)."""
    counted = scored_verifications(verifications)
    if skip_policy == "zero":
        counted.update({vid: {**v, "score": 0.0} for vid, v in verifications.items() if v.get("skipped")})
    return counted


def task_score(verifications: Mapping[str, Mapping[str, Any]], skip_policy: SkipPolicy = "zero") -> float | None:
    """Weighted mean of the counted verifiers' scores, or None when none counts."""
    scored = counted_verifications(verifications, skip_policy)
    total_weight = sum(float(v.get("weight", 1.0)) for v in scored.values())
    if not scored or total_weight <= 0:
        return None
    return sum(float(v["score"]) * float(v.get("weight", 1.0)) for v in scored.values()) / total_weight


def task_outcome(
    verifications: Mapping[str, Mapping[str, Any]], *, failed: bool, timed_out: bool = False,
    skip_policy: SkipPolicy = "zero",
) -> tuple[Outcome, float | None]:
    """The outcome and score of a task run."""
    if timed_out:
        return Outcome.TIMED_OUT, 0.0
    if failed:
        return Outcome.FAILED, 0.0
    scored = counted_verifications(verifications, skip_policy)
    score = task_score(verifications, skip_policy)
    if score is None:
        return Outcome.UNSCORED, None
    if all(float(v["score"]) >= 1.0 for v in scored.values()):
        return Outcome.PASSED, score
    return Outcome.BELOW_ONE, score
