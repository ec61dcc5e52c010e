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

from prefect_agentenv.grading.verification import Verification, Verifications, read_all

SkipPolicy = Literal["zero", "exclude"]
"""How a skipped verifier counts in the task score: as 0 (``zero``) or not at all (``exclude``)."""


class Outcome(str, Enum):
    """How a task run ended, from the point of view of grading."""

    PASSED = "PASSED"
    BELOW_ONE = "BELOW_ONE"
    UNSCORED = "UNSCORED"
    FAILED = "FAILED"
    TIMED_OUT = "TIMED_OUT"


def verification_score(verification: Mapping[str, Any] | Verification) -> float | None:
    """The score a verification counts with: ``None`` when skipped, 0 when errored or malformed."""
    return Verification.read(verification).counted_score


def counted_verifications(verifications: Verifications, skip_policy: SkipPolicy = "zero") -> dict[str, Verification]:
    """The verifications the task score counts, read, with the score they count with: the scored
    ones (errored or malformed ones at 0), and the skipped ones at 0 under ``zero``."""
    read = read_all(verifications)
    counted = {vid: v.model_copy(update={"score": v.counted_score}) for vid, v in read.items()
               if v.counted_score is not None}
    if skip_policy == "zero":  # after the scored ones: the order the weighted sum adds them in
        counted.update({vid: v.model_copy(update={"score": 0.0}) for vid, v in read.items() if v.skipped})
    return counted


def task_score(verifications: Verifications, skip_policy: SkipPolicy = "zero") -> float | None:
    """Weighted mean of the counted verifiers' scores, or None when none counts."""
    scored = counted_verifications(verifications, skip_policy)
    total_weight = sum(v.weight for v in scored.values())
    if not scored or total_weight <= 0:
        return None
    return sum(float(v.score or 0.0) * v.weight for v in scored.values()) / total_weight


def task_outcome(
    verifications: Verifications, *, failed: bool, timed_out: bool = False,
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
        skipped = any(v.skipped for v in read_all(verifications).values())
        return (Outcome.FAILED, 0.0) if tolerated_failures and not skipped else (Outcome.UNSCORED, None)
    if all(float(v.score or 0.0) >= 1.0 for v in scored.values()):
        return Outcome.PASSED, score
    return Outcome.BELOW_ONE, score
