"""The gateway's own refusals, in the error shape of the wire the client speaks, so its SDK shows the message."""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.responses import JSONResponse

from prefect_agentenv.gateway.config import GatewayConfig, Wire

GATEWAY_HEADER = "x-agentenv-gateway"
"""Set on every answer the gateway writes itself (not the upstream's), so a refusal is never taken for the provider's."""


def error_response(wire: Wire, status: int, kind: str, message: str) -> JSONResponse:
    """An error answer: Anthropic's ``{"type": "error", "error": {...}}`` or OpenAI's ``{"error": {...}}``."""
    if wire == "messages":
        body: dict[str, object] = {"type": "error", "error": {"type": kind, "message": message}}
    else:
        body = {"error": {"message": message, "type": kind, "code": kind, "param": None}}
    return JSONResponse(body, status_code=status, headers={GATEWAY_HEADER: "refused"})


def models_wire(headers: Headers, config: GatewayConfig) -> Wire:
    """The wire whose upstream lists models for this client: Anthropic's SDKs send ``anthropic-version``;
    any other client gets the chat upstream's list (the Responses upstream's when only that is configured)."""
    if "anthropic-version" in headers:
        return "messages"
    return "responses" if config.chat is None and config.responses is not None else "chat"
