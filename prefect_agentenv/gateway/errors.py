"""The gateway's own refusals, in the error shape of the wire the client speaks, so its SDK shows the message."""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.responses import JSONResponse

from prefect_agentenv.gateway.config import GatewayConfig, Wire
from prefect_agentenv.gateway.ledger import LimitName

GATEWAY_HEADER = "x-agentenv-gateway"
"""Set on every answer the gateway writes itself (not the upstream's), so a refusal is never taken for the provider's."""


LIMIT_HEADER = "x-agentenv-limit"
"""On a refusal for a limit: which one (``tokens``, ``budget_usd``, ...)."""
REFUSAL_STATUS = 400
"""The status of a refusal for a limit, a budget or a replay miss. Not 429: harnesses retry a 429 (the
SDKs twice, some agents ten times with backoff, some until a wall-clock cap), each retry refused
again, and the task run sits in backoff instead of ending; several read a 429 as "the provider is
busy", which this is not. A 400 is retried by none and shown by all; Anthropic itself answers a spent
credit balance with a 400. ``x-should-retry: false`` also tells the SDKs that honour it not to retry."""


def error_response(wire: Wire, status: int, kind: str, message: str, *, code: str | None = None,
                   headers: dict[str, str] | None = None) -> JSONResponse:
    """An error answer: Anthropic's ``{"type": "error", "error": {...}}`` or OpenAI's ``{"error": {...}}``."""
    if wire == "messages":
        body: dict[str, object] = {"type": "error", "error": {"type": kind, "message": message}}
    else:
        body = {"error": {"message": message, "type": kind, "code": code or kind, "param": None}}
    return JSONResponse(body, status_code=status, headers={GATEWAY_HEADER: "refused", **(headers or {})})


def limit_refusal(wire: Wire, limit: LimitName) -> JSONResponse:
    """The answer to a call made after the run's ``limit`` (or its budget) was reached."""
    what = ("the benchmark run's budget" if limit.startswith("budget_") else "this task run's limit") + f" ({limit})"
    return error_response(wire, REFUSAL_STATUS, "invalid_request_error",
                          f"the model gateway refused this call: {what} has been reached, so no further model "
                          "calls are allowed; stop and give your final answer",
                          code="limit_reached", headers={LIMIT_HEADER: limit, "x-should-retry": "false"})


def replay_miss(wire: Wire, model: str | None, digest: str) -> JSONResponse:
    """The answer to a request a replay's cassette has no answer for."""
    return error_response(wire, REFUSAL_STATUS, "invalid_request_error",
                          f"the model gateway is replaying a recorded run and has no answer for this request "
                          f"(model {model!r}, request {digest}): the agent asked something the recording never did",
                          code="not_in_cassette", headers={"x-should-retry": "false"})


def models_wire(headers: Headers, config: GatewayConfig) -> Wire:
    """The wire whose upstream lists models for this client: Anthropic's SDKs send ``anthropic-version``;
    any other client gets the chat upstream's list (the Responses upstream's when only that is configured)."""
    if "anthropic-version" in headers:
        return "messages"
    return "responses" if config.chat is None and config.responses is not None else "chat"
