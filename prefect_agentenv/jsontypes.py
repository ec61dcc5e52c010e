"""Names for JSON as it crosses the wire or sits in a document before it is parsed.

Data with a known shape travels between modules as a pydantic model. What stays JSON is what a
peer sends or receives as such (a JSON-RPC ``params`` object, a tool's arguments, an env's
exported state, a JSON Schema) and a document before validation. ``JsonObject`` marks those
places: its values are typed as JSON (pydantic's ``JsonValue``), so the type checker asks for a
check before a value is used as anything narrower.
"""

from __future__ import annotations

from typing import TypeAlias

from pydantic import JsonValue

JsonObject: TypeAlias = dict[str, JsonValue]
"""A JSON object: string keys, JSON values."""

JsonArray: TypeAlias = list[JsonValue]
"""A JSON array."""

__all__ = ["JsonArray", "JsonObject", "JsonValue"]
