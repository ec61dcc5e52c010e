"""A verifier's record and its rows: ``metadata.verifications[verifier_id]``, typed.

:class:`Verification` is what a verifier writes, :class:`VerificationRow` one graded item of it.
Both live with the run context (``RunMetadata.verifications`` holds them) at the bottom of the
package, so every layer that carries them — grading, the steps, the reports, the transcript,
the benchmark statistics — shares one type; ``grading.verification`` has the helpers that build
them. Each is written as the record it always was (the keys set, in the order given), and read
from a stored record liberally (:meth:`Verification.read`, :meth:`VerificationRow.read`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal, TypeAlias, TypeGuard

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidatorFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from prefect_agentenv.attribute_docs import attribute_docstrings
from prefect_agentenv.jsontypes import JsonObject

__all__ = ["Aggregator", "Axes", "RowResult", "Verification", "VerificationRow"]


Aggregator: TypeAlias = Literal["all_pass", "any_pass", "weighted_average"]
"""How a verifier folds its rows into one score (``grading.aggregate``)."""

Axes: TypeAlias = dict[str, float] | list[str]
"""A verifier's declared reporting axes: ``{axis: weight}`` or a list of axes."""

RowResult: TypeAlias = Literal["pass", "fail", "partial"]
"""A row's verdict: ``partial`` for a score strictly between 0 and 1."""


class VerificationRow(BaseModel):
    """One graded item of a verifier (a rubric criterion, an assertion, a check): a row of
    ``Verification.results``. Keys a verifier adds (``evidence``, ``label``, ``status``,
    ``criterion``, …) are kept as extras (``row.model_extra``).

    It serializes as the row it always was: the keys given, in the order given (a row made from
    keyword arguments: the fields set, in declaration order, then the extras); a field left at
    its default is not written. Stored rows are read through :meth:`read`, liberally."""

    model_config = ConfigDict(extra="allow", json_schema_extra=attribute_docstrings)

    id: str
    """The item's id as the task document wrote it (a criterion id, ``prompt_error``…)."""
    result: RowResult
    """``pass``, ``fail``, or ``partial`` for a partial score strictly between 0 and 1."""
    score: float = Field(ge=0.0, le=1.0)
    """1 when the item holds, 0 when it does not, in between for partial credit."""
    weight: float = Field(default=1.0, allow_inf_nan=False)
    """How much the item counts; negative for a penalty, 0 for information only."""
    justification: str | None = None
    """Why the grader decided so."""
    axis: str | None = None
    """The reporting axis the item counts on (a rubric criterion's or an assertion's ``axis``)."""
    verifier_id: str | None = None
    """The verifier the row came from, in an ``aggregate_verifiers`` step's rows."""

    _order: tuple[str, ...] = PrivateAttr(default=())
    """The order of the keys as given; empty: declaration order."""

    @model_validator(mode="wrap")
    @classmethod
    def _keep_order(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> VerificationRow:
        row: VerificationRow = handler(data)
        if isinstance(data, Mapping) and not row._order:
            row._order = tuple(data)
        return row

    @model_serializer(mode="wrap")
    def _as_row(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The stored row: the keys set, in the order given (the handler writes fields first)."""
        data = handler(self)
        kept = self.model_fields_set | set(self.model_extra or {})
        keys = [k for k in self._order if k in data] + [k for k in data if k not in self._order]
        return {key: data[key] for key in keys if key in kept}

    @property
    def passed(self) -> bool:
        return self.result == "pass"

    @classmethod
    def read(cls, raw: Mapping[str, Any] | VerificationRow, index: int = 0) -> VerificationRow:
        """A stored row (a plugin's, an older report's), read liberally when it is not a valid
        row: an id that is missing reads ``row<n>``; a score that is not a number in [0, 1] reads
        clamped, or 0 when not a number; a result that is not ``pass``/``fail``/``partial`` reads
        from the score; a weight that is not a finite number reads 1; an ``axis``, ``verifier_id``
        or ``justification`` that is not text reads ``None``. Written again, it keeps its key order."""
        if isinstance(raw, VerificationRow):
            return raw
        try:
            return cls.model_validate(raw)
        except ValidationError:
            pass
        score, weight, result = raw.get("score"), raw.get("weight"), raw.get("result")
        value = min(1.0, max(0.0, float(score))) if _is_number(score) else 0.0
        if result not in ("pass", "fail", "partial"):
            result = "pass" if value >= 1.0 else "partial" if value > 0.0 else "fail"
        texts = {name: raw.get(name) if isinstance(raw.get(name), str) else None
                 for name in ("justification", "axis", "verifier_id")}
        extra = {k: v for k, v in raw.items() if k not in cls.model_fields}
        row = cls.model_construct({k for k in raw if k in cls.model_fields}, id=str(raw.get("id") or f"row{index + 1}"),
                                  result=result, score=value, weight=float(weight) if _is_number(weight) else 1.0,
                                  **texts, **extra)
        row._order = tuple(raw)
        return row


class Verification(BaseModel):
    """One verifier's result, ``metadata.verifications[verifier_id]`` (``grading.verification``
    builds them). Fields are declared in the order a record prints them; extra keys (``url``,
    ``judge``, ``env_id``, ``verifier_ids``, …) are kept after them, in their own order.

    It serializes as the record it always was: the fields that were set, in declaration order,
    then the extras as given (a field left at its default is not written). One read from a stored
    record, or made with :meth:`written`, keeps the order its keys came in."""

    model_config = ConfigDict(extra="allow", json_schema_extra=attribute_docstrings)

    results: list[VerificationRow] = Field(default_factory=list)
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

    _order: tuple[str, ...] = PrivateAttr(default=())
    """The order of the keys as given (:meth:`read`, :meth:`written`); empty: declaration order."""

    @model_serializer(mode="wrap")
    def _as_record(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The stored record: the fields set, then the extras (the handler writes fields first)."""
        data = handler(self)
        kept = self.model_fields_set | set(self.model_extra or {})
        keys = [k for k in self._order if k in data] + [k for k in data if k not in self._order]
        return {key: data[key] for key in keys if key in kept}

    @classmethod
    def written(cls, **fields: Any) -> Verification:
        """A validated verification written with its keys in the order given here (a record
        whose order predates the declaration order, such as a judge's unreadable output)."""
        verification = cls.model_validate(fields)
        verification._order = tuple(fields)
        return verification

    def record(self) -> JsonObject:
        """The record as it is written (see the class docstring), for a JSON view of its own."""
        return self.model_dump(mode="json")

    @classmethod
    def read(cls, raw: Mapping[str, Any] | Verification) -> Verification:
        """A stored record, read liberally (plugins and scripts write records too): a score that is
        not a number reads ``None`` (it counts 0 unless skipped), a weight that is not a finite
        number reads 1, rows that are not objects are dropped and the others read as
        :meth:`VerificationRow.read` reads them, axes that are neither an object nor a list read
        ``None``. Written again, it keeps the order of the record's keys."""
        if isinstance(raw, Verification):
            return raw
        score, weight = raw.get("score"), raw.get("weight")
        extra = {k: v for k, v in raw.items() if k not in cls.model_fields}
        read = cls.model_construct(
            {k for k in raw if k in cls.model_fields},
            results=[VerificationRow.read(r, i) for i, r in enumerate(
                r for r in raw.get("results") or [] if isinstance(r, Mapping | VerificationRow))],
            score=score if _is_number(score, finite=False) else None, weight=weight if _is_number(weight) else 1.0,
            skipped=bool(raw.get("skipped")), errored=bool(raw.get("errored")), axes=_axes(raw.get("axes")),
            **{name: raw.get(name) for name in ("aggregator", "skip_reason", "error", "format", "step_type")}, **extra)
        read._order = tuple(raw)
        return read

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


def _is_number(value: object, *, finite: bool = True) -> TypeGuard[int | float]:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    return math.isfinite(value) or not finite


def _axes(raw: object) -> Axes | None:
    if isinstance(raw, Mapping):
        return {str(axis): float(w) if _is_number(w) else 1.0 for axis, w in raw.items()}
    return [str(axis) for axis in raw] if isinstance(raw, list) else None
