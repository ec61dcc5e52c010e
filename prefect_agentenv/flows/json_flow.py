"""A Prefect flow whose parameters reach the API without FastAPI.

Prefect writes a flow run's parameters with FastAPI's ``jsonable_encoder``, and imports FastAPI to
do it: 0.2–0.4 s of CPU at the start of every ``run`` and ``bench``, before the first step (Prefect
imports nothing else of FastAPI in a run). Our flows take JSON values, paths and pydantic models.
For those the encoder's answer is known — a model is ``model_dump(mode="json", by_alias=True)``, a
path its string, a tuple a list — so this flow writes them itself, and hands anything else to
Prefect's own method: the stored parameters are the same either way.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePath
from typing import Any, ParamSpec, TypeVar

from prefect.flows import Flow
from pydantic import BaseModel

__all__ = ["JsonParameterFlow", "json_parameter_flow"]

P = ParamSpec("P")
R = TypeVar("R")

_PLAIN = (bool, int, float, str)

_OTHER = object()
"""A value this module does not encode itself."""


def encode_plain(value: Any) -> Any:
    """``value`` as FastAPI's ``jsonable_encoder`` writes it, or ``_OTHER`` for a value of any other
    kind than JSON values, paths, pydantic models and lists, tuples and dicts of them."""
    if value is None or type(value) in _PLAIN:  # subclasses (an enum of strings) go to Prefect
        return value
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, (list, tuple)):
        items = [encode_plain(item) for item in value]
        return _OTHER if any(item is _OTHER for item in items) else items
    if isinstance(value, dict) and all(type(key) is str for key in value):
        entries = {key: encode_plain(item) for key, item in value.items()}
        return _OTHER if any(item is _OTHER for item in entries.values()) else entries
    return _OTHER


class JsonParameterFlow(Flow[P, R]):
    """A ``Flow`` that encodes plain parameters itself (see the module's docstring)."""

    def serialize_parameters(self, parameters: dict[str, Any]) -> dict[str, Any]:
        encoded = {key: encode_plain(value) for key, value in parameters.items()}
        others = {key: parameters[key] for key, value in encoded.items() if value is _OTHER}
        if others:
            encoded.update(super().serialize_parameters(others))
        return encoded


def json_parameter_flow(**options: Any) -> Callable[[Callable[P, R]], JsonParameterFlow[P, R]]:
    """``@prefect.flow(**options)``, building a :class:`JsonParameterFlow`."""

    def build(fn: Callable[P, R]) -> JsonParameterFlow[P, R]:
        return JsonParameterFlow(fn=fn, **options)

    return build
