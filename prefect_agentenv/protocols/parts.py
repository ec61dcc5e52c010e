"""A2A-style parts, as the env data plane carries them: ``{kind: "data"|"text"|"file", ...}``.

Read liberally (see :mod:`prefect_agentenv.protocols.wire`): a part without ``kind`` (A2A 1.0) is
read by the member it carries.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, TypeAdapter, model_validator

from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.protocols.wire import WireModel as _Wire


class DataPart(_Wire):
    """Structured data, e.g. ``{"emails": [...]}``."""

    kind: Literal["data"] = "data"
    data: JsonObject
    metadata: JsonObject | None = None


class TextPart(_Wire):
    """Plain text."""

    kind: Literal["text"] = "text"
    text: str
    metadata: JsonObject | None = None


class FileContent(_Wire):
    """A file carried inline (base64 ``bytes``) or by reference (``uri``)."""

    bytes_: str | None = Field(default=None, alias="bytes")
    uri: str | None = None
    mime_type: str | None = None
    name: str | None = None

    @model_validator(mode="after")
    def _bytes_or_uri(self) -> FileContent:
        if (self.bytes_ is None) == (self.uri is None):
            raise ValueError("a file carries exactly one of bytes and uri")
        return self

    def content(self) -> bytes:
        """The decoded bytes of an inline file.

        Raises:
            ValueError: the file is a reference (``uri``) or its bytes are not base64.
        """
        if self.bytes_ is None:
            raise ValueError(f"file {self.name or self.uri!r} is a reference, not inline bytes")
        return base64.b64decode(self.bytes_, validate=True)


class FilePart(_Wire):
    """A file, e.g. an environment artifact's JSON document."""

    kind: Literal["file"] = "file"
    file: FileContent
    metadata: JsonObject | None = None

    @classmethod
    def from_bytes(cls, content: bytes, *, name: str | None = None, mime_type: str | None = None) -> FilePart:
        """An inline file part (base64-encoded, as the wire wants)."""
        encoded = base64.b64encode(content).decode("ascii")
        return cls(file=FileContent(bytes=encoded, name=name, mime_type=mime_type))


def _part_kind(value: Any) -> str | None:
    """``kind`` when given, else guessed from the member a part carries (A2A 1.0 parts have no kind)."""
    if isinstance(value, Mapping):
        kind = value.get("kind")
        if kind is None:
            kind = next((k for k in ("text", "data", "file") if value.get(k) is not None), None)
        return str(kind) if kind is not None else None
    return getattr(value, "kind", None)


Part = Annotated[
    Annotated[DataPart, Tag("data")] | Annotated[TextPart, Tag("text")] | Annotated[FilePart, Tag("file")],
    Discriminator(_part_kind),
]
"""An A2A-style part: ``{kind: "data"|"text"|"file", ...}``; without ``kind``, by the member it carries."""

_parts = TypeAdapter(list[Part])


def parse_parts(raw: Sequence[Part | JsonObject]) -> list[Part]:
    """Validate parts given as models or as wire dicts.

    Raises:
        ValueError: a part is malformed (pydantic's ``ValidationError`` is a ``ValueError``).
    """
    return _parts.validate_python([p.to_wire() if isinstance(p, _Wire) else p for p in raw])


def parts_to_documents(parts: Sequence[Part]) -> list[JsonObject]:
    """The JSON objects carried by parts: data parts as-is, JSON files and JSON texts parsed.

    This is how an env reads ``data/add``: an environment artifact usually arrives as a JSON
    file part, hand-written seeds as data parts.

    Raises:
        ValueError: a part carries no JSON object (a reference file, non-JSON text or bytes).
    """
    documents: list[JsonObject] = []
    for index, part in enumerate(parts):
        if isinstance(part, DataPart):
            documents.append(part.data)
            continue
        raw = part.text if isinstance(part, TextPart) else part.file.content()
        try:
            value = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"part {index} ({part.kind}) is not a JSON document: {exc}") from exc
        if not isinstance(value, dict):
            raise ValueError(f"part {index} ({part.kind}) holds JSON {type(value).__name__}, expected an object")
        documents.append(value)
    return documents
