"""A sweep's matrix: run overrides, each with several values, crossed into cells.

A benchmark's ``matrix:`` block, ``bench --matrix KEY=V1,V2`` and the flow's ``matrix`` parameter
all say the same thing: ``{override key: [values]}``. Every combination of one value per key is a
cell, applied as overrides on top of the run's; the cells share one benchmark run. A matrix is
checked as a whole before anything runs: a key that is no run override, an empty list and a value
given twice are refused with the key named.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import product

from pydantic import BaseModel, ConfigDict

from prefect_agentenv.exceptions import ConfigurationError
from prefect_agentenv.runtime.resources.overrides import RunOverrides

Matrix = dict[str, list[str]]
"""Override key → the values the sweep tries, in order."""


class SweepCell(BaseModel):
    """One combination of the matrix's values: its label and the overrides it applies."""

    model_config = ConfigDict(frozen=True)

    label: str
    """``a2a_agent_id=llm,model=m``: the matrix's keys in order; a free-form value (an agent
    config) by its digest, so a credential in it never reaches a name, a tag or a report."""
    overrides: dict[str, str]


def check_matrix(matrix: Mapping[str, Sequence[object]] | None) -> Matrix:
    """The matrix with its values as text, or why it cannot run.

    Raises:
        ValueError: a key is no run override (with the closest one), a key has no value or a
            value twice, or a value is not text or a number.
    """
    checked: Matrix = {}
    for key, values in (matrix or {}).items():
        try:
            RunOverrides.parse({key: ""})
        except ConfigurationError as exc:
            raise ValueError(f"matrix: {exc}") from None
        if isinstance(values, str | bytes) or not isinstance(values, Sequence):
            raise ValueError(f"matrix.{key}: give a list of values, e.g. {key}: [a, b]")
        if not values:
            raise ValueError(f"matrix.{key}: the list is empty; give at least one value")
        if any(not isinstance(v, str | int | float) or isinstance(v, bool) for v in values):
            raise ValueError(f"matrix.{key}: every value must be text or a number")
        texts = [str(v) for v in values]
        twice = sorted({v for v in texts if texts.count(v) > 1})
        if twice:
            raise ValueError(f"matrix.{key}: {', '.join(repr(v) for v in twice)} given more than once")
        checked[key] = texts
    return checked


def merge_matrix(document: Mapping[str, Sequence[str]] | None, given: Mapping[str, Sequence[str]] | None) -> Matrix:
    """The run's matrix: the document's, with each axis the run gives replacing the document's of
    the same key (as a run's overrides replace the document's defaults key by key).

    Raises:
        ConfigurationError: the merged matrix is refused by :func:`check_matrix`.
    """
    merged = {**(document or {}), **(given or {})}
    try:
        return check_matrix(merged)
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None


def sweep_cells(matrix: Matrix, overrides: Mapping[str, str] | None = None) -> list[SweepCell]:
    """Every combination of the matrix's values (the first key varies slowest); empty without a matrix.

    Raises:
        ConfigurationError: a cell's overrides, on top of ``overrides``, are refused.
    """
    if not matrix:
        return []
    cells = []
    for values in product(*matrix.values()):
        own = dict(zip(matrix, values, strict=True))
        RunOverrides.parse({**(overrides or {}), **own})  # with the run's overrides: refused together
        recorded = RunOverrides.parse(own).recorded()
        cells.append(SweepCell(label=",".join(f"{key}={recorded[key]}" for key in matrix), overrides=own))
    return cells
