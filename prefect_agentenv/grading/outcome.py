"""The task score and outcome, from the run's verifications.

Policy (also in docs/scoring.md):

* Each verifier writes ``metadata.verifications[id] = {score, weight?, skipped?, errored?, ...}``.
* A verifier that **errored** (it raised, timed out, returned garbage, or wrote no numeric score)
  scores 0 and counts with its weight: an error can never raise a score.
* The task **score** is the weighted mean of the verifiers' scores (weight 1 unless the verifier
  sets one); ``None`` when nothing was scored. A skipped verifier counts as 0 under the skip
  policy ``zero`` (the default: a run cut off before it could be graded is not a success) and
  is left out under ``exclude``.
* The **outcome** is, in order: ``TIMED_OUT`` (the run hit its time limit), ``FAILED`` (a step
  failed the task, an env or agent exited on its own during the run, or a tolerated failure
  left nothing to grade and nothing was skipped), ``UNSCORED`` (no verifier, or every verifier
  skipped for a documented reason under ``exclude``), ``PASSED`` (every counted verifier scored
  1.0), else ``BELOW_ONE``.
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


def verification_score(verification: Mapping[str, Any]) -> float | None:
    """The score a verification counts with: ``None`` when skipped, 0 when errored or malformed."""
    if verification.get("skipped"):
        return None
    score = verification.get("score")
    if verification.get("errored") or not isinstance(score, int | float) or isinstance(score, bool):
        return 0.0
    return min(1.0, max(0.0, float(score)))


def scored_verifications(verifications: Mapping[str, Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """Verifications that were not skipped (errored or malformed ones count, as 0)."""
    return {vid: {**v, "score": verification_score(v)} for vid, v in verifications.items()
            if verification_score(v) is not None}


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
    total_weight = sum(_weight(v) for v in scored.values())
    if not scored or total_weight <= 0:
        return None
    return sum(float(v["score"]) * _weight(v) for v in scored.values()) / total_weight


def task_outcome(
    verifications: Mapping[str, Mapping[str, Any]], *, failed: bool, timed_out: bool = False,
    skip_policy: SkipPolicy = "zero", tolerated_failures: int = 0,
) -> tuple[Outcome, float | None]:
    """The outcome and score of a task run.

    Args:
        verifications: ``metadata.verifications``.
        failed: a step failed the task, or an instance of the run crashed.
        timed_out: the run hit its time limit.
        skip_policy: how skipped verifiers count (``zero`` or ``exclude``).
        tolerated_failures: steps that failed under ``fail_task_on_error: false``; when nothing
            was scored or skipped they are why, so the run is FAILED rather than UNSCORED.
    """
    if timed_out:
        return Outcome.TIMED_OUT, 0.0
    if failed:
        return Outcome.FAILED, 0.0
    scored = counted_verifications(verifications, skip_policy)
    score = task_score(verifications, skip_policy)
    if score is None:
        skipped = any(v.get("skipped") for v in verifications.values())
        return (Outcome.FAILED, 0.0) if tolerated_failures and not skipped else (Outcome.UNSCORED, None)
    if all(float(v["score"]) >= 1.0 for v in scored.values()):
        return Outcome.PASSED, score
    return Outcome.BELOW_ONE, score


def _weight(verification: Mapping[str, Any]) -> float:
    weight = verification.get("weight", 1.0)
    return float(weight) if isinstance(weight, int | float) and not isinstance(weight, bool) else 1.0
