"""JSON-RPC 2.0 framing shared by the env data plane's client and the reference env servers.

Only what both sides need: the standard error codes, the envelope models, and a fault that
server-side handlers raise to answer with an error object. Errors travel as HTTP 200 with a
JSON-RPC ``error`` member, as the env wire contract requires.
"""

from __future__ import annotations

import itertools
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from prefect_agentenv.jsontypes import JsonArray, JsonObject

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_ERROR = -32000
"""Application errors; ``data.code`` names the env's own error (``not_found``, …)."""

_ids = itertools.count(1)


class ErrorObject(BaseModel):
    """The ``error`` member of a JSON-RPC response; a ``null`` message reads as empty."""

    model_config = ConfigDict(extra="allow")

    code: int
    message: str = ""
    data: Any = None

    @field_validator("message", mode="before")
    @classmethod
    def _null_message(cls, value: Any) -> Any:
        return "" if value is None else value


class Response(BaseModel):
    """A JSON-RPC response as received; exactly one of ``result`` and ``error`` is meaningful."""

    model_config = ConfigDict(extra="allow")

    jsonrpc: str = "2.0"
    id: int | str | None = None
    result: Any = None
    error: ErrorObject | None = None


class Request(BaseModel):
    """A JSON-RPC request as received by a server; ``id`` absent means a notification."""

    model_config = ConfigDict(extra="forbid")

    jsonrpc: str = "2.0"
    method: str = Field(min_length=1)
    params: JsonObject | JsonArray | None = None
    id: int | str | None = None


class JsonRpcFault(Exception):
    """Raised by a server-side handler to answer with a JSON-RPC error instead of a result.

    It never leaves the server: the dispatcher turns it into an error object. Clients see
    :class:`prefect_agentenv.exceptions.EnvRpcError` instead.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    @classmethod
    def env_error(cls, code: str, message: str, **details: Any) -> JsonRpcFault:
        """An application error (-32000) whose ``data.code`` names what went wrong."""
        return cls(SERVER_ERROR, message, {"code": code, **details})


def request(method: str, params: JsonObject | None = None) -> JsonObject:
    """A request envelope with a fresh id."""
    return {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params or {}}


def success(request_id: int | str | None, result: Any) -> JsonObject:
    """A result envelope answering ``request_id``."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def failure(request_id: int | str | None, code: int, message: str, data: Any = None) -> JsonObject:
    """An error envelope answering ``request_id`` (``None`` when the request could not be read)."""
    error: JsonObject = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}
