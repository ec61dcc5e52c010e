"""What every model read off the wire shares: liberal reading, and errors that name the peer.

Peers are written with other tools (the AgentEnv SDKs, plain a2a-sdk or mcp servers, hand-rolled
services), so a card or reply is read liberally: members we do not know are kept and ignored,
``null`` stands for "not given" wherever a member is optional (its default applies), and members
are read in camelCase or snake_case. What we send stays strict: camelCase, no ``null``.

When a reply still cannot be used, :func:`unusable_reply` builds one
:class:`~prefect_agentenv.exceptions.ProtocolError` that names the peer, the URL and the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from prefect_agentenv.exceptions import ProtocolError
from prefect_agentenv.jsontypes import JsonObject


class WireModel(BaseModel):
    """Base of wire models: unknown members kept, ``null`` = absent, camelCase or snake_case read."""

    model_config = ConfigDict(
        extra="allow", alias_generator=to_camel, validate_by_name=True, validate_by_alias=True,
        serialize_by_alias=True,
    )

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, value: Any) -> Any:
        # A peer that writes ``"required": null`` means "not said"; the field's default applies.
        # A required member sent as null is then reported as missing, which names the field.
        if isinstance(value, Mapping):
            return {k: v for k, v in value.items() if v is not None}
        return value

    def to_wire(self) -> JsonObject:
        """JSON-ready dict with the wire's member names, optional members left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


def field_path(loc: tuple[int | str, ...]) -> str:
    """A pydantic location as a JSON path: ``capabilities.extensions[0].required``."""
    path = ""
    for item in loc:
        path += f"[{item}]" if isinstance(item, int) else (f".{item}" if path else str(item))
    return path or "(root)"


def first_problem(exc: ValidationError) -> str:
    """The first validation problem as ``field: why``."""
    first = exc.errors()[0]
    return f"{field_path(tuple(first['loc']))}: {first['msg']}"


def unusable_reply(peer: str, url: str, what: str, exc: ValidationError) -> ProtocolError:
    """The error for a reply we cannot use: ``env 'mail' at URL sent an env card we cannot use: field …``.

    Args:
        peer: how the peer is named (``env 'mail'``, ``agent 'assistant'``, or just ``the peer``).
        url: the address that answered.
        what: what was expected (``an env card``, ``a data/get result``).
    """
    count = exc.error_count()
    more = f" (and {count - 1} more problem{'s' if count > 2 else ''})" if count > 1 else ""
    return ProtocolError(f"{peer} at {url} sent {what} we cannot use: field {first_problem(exc)}{more}", url=url)
