"""What a verifier writes: ``metadata.verifications[verifier_id]``, as a :class:`Verification`.

``{results: [rows], score, weight, aggregator?, skipped?, skip_reason?, errored?, error?, format?,
step_type?, axes?, ...}`` where a row is ``{id, result, score, weight, justification?, evidence?, ...}``.
A skipped verifier has no score and no rows (``axes`` lists the reporting axes it would have
scored); the task's skip policy says whether it counts 0 or is left out
(:mod:`prefect_agentenv.grading.outcome`).

The run keeps the records as plain mappings (``RunMetadata.verifications``) because plugins and
outcome scripts write their own, and the report prints each record's keys in the order they were
written. The helpers below build a validated :class:`Verification`; :meth:`Verification.record`
is what a step stores, its key order is the declaration order of the fields set, then the
extra keys as given: the order the records always had. A step stores ``verification.record()``;
readers go through :meth:`Verification.read`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from prefect_agentenv.context import PromptResponse
from prefect_agentenv.grading.aggregate import Aggregator, aggregate


Axes = dict[str, float] | list[str]
"""A verifier's declared reporting axes: ``{axis: weight}`` or a list of axes."""


class Verification(BaseModel):
    """One verifier's result. Fields are declared in the order a record prints them; extra keys
    (``url``, ``judge``, ``env_id``, ``verifier_ids``, …) are kept after them, in their own order."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)

    results: list[dict[str, Any]] = Field(default_factory=list)
    """The graded rows (criteria, assertions, checks); empty when skipped."""
    score: float | None = None
    """The verifier's score in [0, 1]; ``None`` when skipped (or, as read, not a number)."""
    weight: float = 1.0
    """How much the verifier counts in the task score; 0 for one an aggregate folds."""
    aggregator: Aggregator | None = None
    """How the rows were folded into the score."""
    skipped: bool = False
    """Not scored, for a documented reason (the skip policy decides how it counts)."""
    skip_reason: str | None = None
    """Why it was skipped: ``truncated``, ``timeout``, …"""
    errored: bool = False
    """The verifier could not grade: it counts 0."""
    error: str | None = None
    """What went wrong, when it errored."""
    format: str | None = None
    """The verifier's kind of record: ``probe``, ``outcome``, ``aggregate``, a rubric output format…"""
    step_type: str | None = None
    """The step type of an errored verifier."""
    axes: Axes | None = None
    """The reporting axes it declares (``{axis: weight}`` or a list): a skipped or errored verifier
    counts 0 on them."""

    def record(self) -> dict[str, Any]:
        """The record to store: the fields set, in declaration order, then the extras as given."""
        out = {name: getattr(self, name) for name in type(self).model_fields if name in self.model_fields_set}
        out.update(self.model_extra or {})
        return out

    @classmethod
    def read(cls, raw: Mapping[str, Any] | Verification) -> Verification:
        """A stored record, read liberally (plugins and scripts write records too): a score that is
        not a number reads ``None`` (it counts 0 unless skipped), a weight that is not a finite
        number reads 1, rows that are not objects are dropped, axes that are neither an object nor
        a list read ``None``. For reading only: the record as stored keeps its own key order."""
        if isinstance(raw, Verification):
            return raw
        score, weight = raw.get("score"), raw.get("weight")
        extra = {k: v for k, v in raw.items() if k not in cls.model_fields}
        return cls.model_construct(
            {k for k in raw if k in cls.model_fields},
            results=[dict(r) for r in raw.get("results") or [] if isinstance(r, Mapping)],
            score=score if _is_number(score, finite=False) else None, weight=weight if _is_number(weight) else 1.0,
            skipped=bool(raw.get("skipped")), errored=bool(raw.get("errored")), axes=_axes(raw.get("axes")),
            **{name: raw.get(name) for name in ("aggregator", "skip_reason", "error", "format", "step_type")}, **extra)

    @property
    def counted_score(self) -> float | None:
        """The score the task counts: ``None`` when skipped, 0 when errored or not a number."""
        if self.skipped:
            return None
        if self.errored or self.score is None:
            return 0.0
        return min(1.0, max(0.0, float(self.score)))

    def declared_axes(self) -> dict[str, float]:
        """The ``axes``: ``{axis: |weight|}``, a list counting 1 each; empty when none."""
        if isinstance(self.axes, dict):
            return {axis: abs(weight) for axis, weight in self.axes.items()}
        return dict.fromkeys(self.axes, 1.0) if self.axes is not None else {}


Verifications = Mapping[str, Mapping[str, Any] | Verification]
"""``metadata.verifications`` as stored (records), or already read."""


def read_all(verifications: Verifications) -> dict[str, Verification]:
    """Every stored record of a run, read (see :meth:`Verification.read`)."""
    return {vid: Verification.read(v) for vid, v in verifications.items()}


def _is_number(value: Any, *, finite: bool = True) -> bool:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    return math.isfinite(value) or not finite


def _axes(raw: Any) -> Axes | None:
    if isinstance(raw, Mapping):
        return {str(axis): float(w) if _is_number(w) else 1.0 for axis, w in raw.items()}
    return [str(axis) for axis in raw] if isinstance(raw, list) else None


def scored(rows: Sequence[Mapping[str, Any]], *, aggregator: Aggregator, weight: float, fmt: str | None = None,
           **extra: Any) -> Verification:
    """A verification with its rows folded into one score."""
    return _new(fmt, None, extra, results=[dict(r) for r in rows], score=aggregate(list(rows), aggregator),
                weight=weight, aggregator=aggregator)


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
    row = {"id": "verifier_error", "result": "fail", "score": 0.0, "weight": 1.0,
           "justification": f"the verifier failed: {error}"}
    return _new(fmt, axes, extra, results=[row], score=0.0, weight=weight, errored=True, error=error)


def prompt_error(response: PromptResponse, *, weight: float, fmt: str | None = None) -> Verification:
    """A reply that ended in error scores 0 with one ``prompt_error`` row; no judge is asked."""
    row = {"id": "prompt_error", "result": "fail", "score": 0.0, "weight": 1.0,
           "justification": f"the agent failed: {response.error}"}
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


def normalize_row(raw: Any, index: int) -> dict[str, Any]:
    """A row from user code (an outcome script) in the standard shape.

    ``result`` may be a bool or ``"pass"``/``"fail"``; ``score`` defaults from it; ``weight`` to 1.

    Raises:
        ValueError: the row is not an object with an id and a result or score.
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
    return row
