"""Which upstream serves each wire, how it wants its key, and the prices the gateway counts cost with."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from prefect_agentenv.attribute_docs import attribute_docstrings
from prefect_agentenv.usage import ModelPrice

_CONFIG = ConfigDict(extra="forbid", frozen=True, json_schema_extra=attribute_docstrings)

Wire = Literal["chat", "responses", "messages"]
"""The model APIs the gateway passes through: OpenAI chat completions, OpenAI's Responses API, Anthropic Messages."""
WIRES: tuple[Wire, ...] = ("chat", "responses", "messages")

AuthStyle = Literal["bearer", "x-api-key"]
"""``bearer``: ``Authorization: Bearer <key>`` (OpenAI and every OpenAI-compatible server);
``x-api-key``: ``x-api-key: <key>`` plus ``anthropic-version`` (Anthropic)."""

DEFAULT_ANTHROPIC_VERSION = "2023-06-01"


class RetryPolicy(BaseModel):
    """How the gateway absorbs a provider's rate limits and outages: 429, 500, 502, 503, 504, 529 and
    no answer at all are sent again, with exponential backoff (``Retry-After`` honoured when longer),
    but only before any byte of an answer has reached the client."""

    model_config = _CONFIG

    attempts: int = Field(default=5, ge=0)
    """Retries after the first try (0: relay the provider's first answer, whatever it is)."""
    max_seconds: float = Field(default=60.0, ge=0)
    """The most a call waits in all between tries; a ``Retry-After`` that would pass it ends the retrying
    and the provider's answer is relayed."""
    initial_backoff_seconds: float = Field(default=0.5, gt=0)
    """The first wait; each further one doubles, up to ``max_backoff_seconds``."""
    max_backoff_seconds: float = Field(default=20.0, gt=0)
    """The longest wait the backoff alone chooses (a ``Retry-After`` may ask for more)."""


class Upstream(BaseModel):
    """One provider endpoint the gateway forwards a wire's calls to, with the real key."""

    model_config = _CONFIG

    base_url: str = Field(min_length=1)
    """API root including its version path (https://api.openai.com/v1, https://api.anthropic.com/v1):
    the wire's path (``/chat/completions``, ``/responses``, ``/messages``, ``/models``) is appended."""
    auth: AuthStyle = "bearer"
    """How the upstream wants its key."""
    api_key: SecretStr | None = None
    """The provider's key. Only the upstream request carries it; no client ever sees it."""
    anthropic_version: str = DEFAULT_ANTHROPIC_VERSION
    """Sent as ``anthropic-version`` with ``x-api-key`` auth when the client sent none."""
    timeout_seconds: float = Field(default=600.0, gt=0)
    """Upper bound for connecting and for each read from the upstream; a long generation streams within it."""
    max_concurrency: int | None = Field(default=None, gt=0)
    """Calls in flight to this upstream at once (streams included); more wait their turn. None: no bound."""
    requests_per_minute: int | None = Field(default=None, gt=0)
    """Calls sent to this upstream in any minute (retries included); more wait their turn. None: no bound."""
    tokens_per_minute: int | None = Field(default=None, gt=0)
    """Input plus output tokens of the calls that ended in the last minute; while at or above it, new
    calls wait for the oldest to leave the minute. None: no bound."""
    retry: RetryPolicy = RetryPolicy()
    """Retries of the provider's rate limits and outages."""

    @field_validator("base_url")
    @classmethod
    def _no_trailing_slash(cls, value: str) -> str:
        return value.rstrip("/")

    def auth_headers(self) -> dict[str, str]:
        """The headers that carry the real key, in the upstream's style (none without a key)."""
        if self.api_key is None:
            return {}
        key = self.api_key.get_secret_value()
        if self.auth == "x-api-key":
            return {"x-api-key": key}
        return {"authorization": f"Bearer {key}"}


class GatewayConfig(BaseModel):
    """The gateway's upstreams, one per wire (a wire without one is answered with an error), and prices."""

    model_config = _CONFIG

    chat: Upstream | None = None
    """Where ``/v1/chat/completions`` goes."""
    responses: Upstream | None = None
    """Where ``/v1/responses`` goes."""
    messages: Upstream | None = None
    """Where ``/v1/messages`` goes."""
    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    """Model name to US dollars per million tokens (the ``ModelEndpoint`` block's table): a call of a
    model in it gets a cost; cached input is priced as input."""

    def upstream(self, wire: Wire) -> Upstream | None:
        """The upstream configured for ``wire``, or None."""
        return {"chat": self.chat, "responses": self.responses, "messages": self.messages}[wire]
