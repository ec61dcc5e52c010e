"""A Prefect flow whose parameters reach the API without FastAPI, and whose parameter schema is
built when something reads it.

Prefect writes a flow run's parameters with FastAPI's ``jsonable_encoder``, and imports FastAPI to
do it: 0.2–0.4 s of CPU at the start of every ``run`` and ``bench``, before the first step (Prefect
imports nothing else of FastAPI in a run). Our flows take JSON values, paths and pydantic models.
For those the encoder's answer is known — a model is ``model_dump(mode="json", by_alias=True)``, a
path its string, a tuple a list — so this flow writes them itself, and hands anything else to
Prefect's own method: the stored parameters are the same either way.

Prefect also builds a flow's parameter schema (the JSON schema of its arguments) when the flow is
defined, though only a deployment reads it. For ``agent-task`` that is 0.2–0.5 s of CPU (the schema
of every step type, built twice) in every ``run`` and ``bench`` before the first step. This flow
builds it on the first read of ``parameters`` instead: a deployment gets the same schema, a run
never pays for it. Prefect has no option for this, so the flow's construction hands Prefect a
placeholder for the schema of its own function only (:func:`_schema_on_first_read`).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from pathlib import PurePath
from typing import Any, ParamSpec, TypeVar

import prefect.flows
from prefect.flows import Flow
from prefect.utilities.callables import ParameterSchema, parameter_schema
from pydantic import BaseModel

__all__ = ["JsonParameterFlow", "json_parameter_flow"]

P = ParamSpec("P")
R = TypeVar("R")

_PLAIN = (bool, int, float, str)

_OTHER = object()
"""A value this module does not encode itself."""

_LATER: Any = object()
"""The parameter schema Prefect is given while the flow is built: built on first read."""

_SCHEMA_LOCK = threading.Lock()


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


@contextlib.contextmanager
def _schema_on_first_read(flow_fn: Callable[..., Any]) -> Iterator[None]:
    """While Prefect builds the flow of ``flow_fn``, its parameter schema is a placeholder (only for
    ``flow_fn``: any other flow built meanwhile gets its schema as usual). Without the name to replace (a
    Prefect that builds it otherwise) the schema is built at once, as Prefect does."""
    original = getattr(prefect.flows, "parameter_schema", None)
    if original is None:
        yield
        return

    def schema(fn: Callable[..., Any]) -> ParameterSchema:
        return _LATER if fn is flow_fn else original(fn)

    with _SCHEMA_LOCK:
        prefect.flows.parameter_schema = schema
        try:
            yield
        finally:
            prefect.flows.parameter_schema = original


class JsonParameterFlow(Flow[P, R]):
    """A ``Flow`` that encodes plain parameters itself and builds its parameter schema when it is
    first read (see the module's docstring)."""

    def __init__(self, fn: Callable[P, R], **options: Any) -> None:
        with _schema_on_first_read(fn):
            super().__init__(fn, **options)

    @property
    def parameters(self) -> ParameterSchema:
        """The flow's parameter schema, as Prefect builds it; built on the first read."""
        schema: ParameterSchema | None = self.__dict__.get("_parameter_schema")
        if schema is None:
            schema = self.__dict__["_parameter_schema"] = parameter_schema(self.fn)
        return schema

    @parameters.setter
    def parameters(self, schema: ParameterSchema) -> None:
        self.__dict__["_parameter_schema"] = None if schema is _LATER else schema

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
