"""Names for JSON as it crosses the wire or sits in a document before it is parsed.

Data with a known shape travels between modules as a pydantic model. What stays JSON is what a
peer sends or receives as such (a JSON-RPC ``params`` object, a tool's arguments, an env's
exported state, a JSON Schema) and a document before validation. ``JsonObject`` marks those
places: its values are typed as JSON (pydantic's ``JsonValue``), so the type checker asks for a
check before a value is used as anything narrower.
"""

from __future__ import annotations

import json
from typing import Any, TypeAlias

from pydantic import JsonValue

JsonObject: TypeAlias = dict[str, JsonValue]
"""A JSON object: string keys, JSON values."""

JsonArray: TypeAlias = list[JsonValue]
"""A JSON array."""



def canonical_json(document: Any) -> bytes:
    """The one byte form of a JSON document that its hash is taken over.

    Sorted keys, no insignificant whitespace, UTF-8 (not ``\\u`` escapes): the same document
    always gives the same bytes whatever the order it was built in.
    """
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode()


__all__ = ["JsonArray", "JsonObject", "JsonValue", "canonical_json"]
