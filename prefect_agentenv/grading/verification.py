"""What a verifier writes: ``metadata.verifications[verifier_id]``, as a :class:`Verification`.

``{results: [rows], score, weight, aggregator?, skipped?, skip_reason?, errored?, error?, format?,
step_type?, axes?, ...}`` where a row is a :class:`VerificationRow`
``{id, result, score, weight, justification?, axis?, evidence?, ...}``.
A skipped verifier has no score and no rows (``axes`` lists the reporting axes it would have
scored); the task's skip policy says whether it counts 0 or is left out
(:mod:`prefect_agentenv.grading.outcome`).

The models live with the run context (``RunMetadata.verifications`` holds them); the helpers
below build a validated :class:`Verification` (each row a validated :class:`VerificationRow`),
which a step stores as it is. It is written as the
record it always was: the fields set in declaration order, then the extra keys as given. Records
a plugin or an older report wrote are read through :meth:`Verification.read`, liberally.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from prefect_agentenv.context import Aggregator, Axes, PromptResponse, Verification, VerificationRow
from prefect_agentenv.grading.aggregate import aggregate

__all__ = ["Axes", "Verification", "VerificationRow", "Verifications", "errored", "normalize_row", "prompt_error",
           "read_all", "scored", "skip_reason", "skipped"]

Verifications = Mapping[str, Mapping[str, Any] | Verification]
"""``metadata.verifications`` as stored (records), or already read."""


def read_all(verifications: Verifications) -> dict[str, Verification]:
    """Every stored record of a run, read (see :meth:`Verification.read`)."""
    return {vid: Verification.read(v) for vid, v in verifications.items()}


def scored(rows: Sequence[VerificationRow | Mapping[str, Any]], *, aggregator: Aggregator, weight: float,
           fmt: str | None = None, **extra: Any) -> Verification:
    """A verification with its rows folded into one score (a row given as a mapping keeps its key order).

    Raises:
        ValueError: a row is not a valid verification row.
    """
    results = [r.model_copy() if isinstance(r, VerificationRow) else VerificationRow.model_validate(r) for r in rows]
    return _new(fmt, None, extra, results=results, score=aggregate(results, aggregator), weight=weight,
                aggregator=aggregator)


def skipped(reason: str, *, weight: float, fmt: str | None = None, axes: Axes | None = None,
            **extra: Any) -> Verification:
    """A verification that was not scored (``truncated``, ``timeout``, …); ``axes``: those it would
    have scored (a benchmark counts them 0 under skip_policy zero)."""
    return _new(fmt, axes, extra, results=[], score=None, weight=weight, skipped=True, skip_reason=reason)


def errored(error: str, *, weight: float, fmt: str | None = None, axes: Axes | None = None,
            **extra: Any) -> Verification:
    """A verifier that could not grade (it raised, timed out, returned garbage) scores 0.

    It stays in the task score and in every aggregate with one failing ``verifier_error`` row, so
    a tolerated failure can never raise a score (docs/scoring.md, "Errors"); it scores 0 on the
    ``axes`` its document declares.
    """
    row = VerificationRow(id="verifier_error", result="fail", score=0.0, weight=1.0,
                          justification=f"the verifier failed: {error}")
    return _new(fmt, axes, extra, results=[row], score=0.0, weight=weight, errored=True, error=error)


def prompt_error(response: PromptResponse, *, weight: float, fmt: str | None = None) -> Verification:
    """A reply that ended in error scores 0 with one ``prompt_error`` row; no judge is asked."""
    row = VerificationRow(id="prompt_error", result="fail", score=0.0, weight=1.0,
                          justification=f"the agent failed: {response.error}")
    return _new(fmt, None, {}, results=[row], score=0.0, weight=weight)


def _new(fmt: str | None, axes: Axes | None, extra: Mapping[str, Any], **fields: Any) -> Verification:
    """A new, validated verification; ``format`` and ``axes`` are only set (and stored) when given."""
    optional = {"format": fmt} if fmt else {}
    return Verification.model_validate({**fields, **optional, **({} if axes is None else {"axes": axes}), **extra})


def skip_reason(response: PromptResponse | None, *, skip_on_truncated: bool, skip_on_timeout: bool) -> str | None:
    """Why a verifier of this reply should not score, if it should not."""
    if response is None:
        return None
    if skip_on_truncated and response.is_truncated:
        return "truncated"
    if skip_on_timeout and response.is_timeout:
        return "timeout"
    return None


def normalize_row(raw: Any, index: int) -> VerificationRow:
    """A row from user code (an outcome script) in the standard shape.

    ``result`` may be a bool or ``"pass"``/``"fail"``; ``score`` defaults from it; ``weight`` to 1.

    Raises:
        ValueError: the row is not an object with an id and a result or score, or a member of
            it is not what a row holds (a score outside [0, 1], an axis that is not text, …).
    """
    if not isinstance(raw, Mapping):
        raise ValueError(f"row {index} is not an object: {raw!r}")
    row = dict(raw)
    row.setdefault("id", f"row{index + 1}")
    result = row.get("result")
    score = row.get("score")
    if isinstance(result, bool):
        result = "pass" if result else "fail"
    if result is None and isinstance(score, int | float):
        result = "pass" if score >= 1 else "fail"
    if result not in ("pass", "fail", "partial"):
        raise ValueError(f"row '{row['id']}' needs result true/false or 'pass'/'fail' (got {row.get('result')!r})")
    row["result"] = result
    row["score"] = float(score) if isinstance(score, int | float) else (1.0 if result == "pass" else 0.0)
    row["weight"] = float(row.get("weight", 1.0))
    try:
        return VerificationRow.model_validate(row)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ValueError(f"row '{row['id']}': {problems}") from None
