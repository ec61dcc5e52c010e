"""From a role (agent, judge, user) to the model endpoint that serves it.

Resolution order, first match wins:

1. a ``ModelEndpoint`` block (named ``default`` unless told otherwise), consulted only when a
   Prefect API is there to ask — so a plain CLI run never starts a temporary server for this;
2. ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` (or their ``PREFECT_AGENTENV_`` forms) from the
   settings;
3. the built-in mock model (``is_mock=True``), whose every use is labelled in reports.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from prefect_agentenv.attribute_docs import attribute_docstrings
from prefect_agentenv.exceptions import ConfigurationError
from prefect_agentenv.gateway.config import WIRES, AuthStyle, GatewayConfig, Upstream, Wire
from prefect_agentenv.protocols.openai import OpenAIClient
from prefect_agentenv.resolution.block_lookup import is_block_name, load_block, prefect_api_configured
from prefect_agentenv.usage import ModelPrice

if TYPE_CHECKING:
    from prefect_agentenv.blocks.model_endpoint import ModelEndpoint

logger = logging.getLogger(__name__)

DEFAULT_MODEL_BLOCK = "default"
MOCK_MODEL = "mock"
"""The model name the built-in mock model answers with."""
DEFAULT_OPENAI_MODEL = "gpt-4.1-mini"
"""Used with ``OPENAI_BASE_URL`` when the caller names no model (settings hold no model name)."""

ModelSource = Literal["block", "settings", "mock"]


class ResolvedModel(BaseModel):
    """Where to send a role's completions, and with which model."""

    model_config = ConfigDict(json_schema_extra=attribute_docstrings, frozen=True)

    role: str
    """The role that was resolved (agent, judge, user…)."""
    base_url: str | None
    """API root including its version path; ``None`` for the mock model until one is started."""
    api_key: SecretStr | None = None
    """Bearer token for the endpoint; never logged or shown."""
    model: str
    """The model name to request."""
    is_mock: bool = False
    """True when nothing is configured and the built-in mock model answers (label its output)."""
    source: ModelSource
    """Where the endpoint came from: a ModelEndpoint block, the settings, or the mock."""
    request_timeout_seconds: float = 120.0
    """Upper bound for one completion request."""
    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    """The endpoint's price table (model name → price per million tokens), from its block."""
    upstream_base_url: str | None = None
    """Set when ``base_url`` is the run's model gateway: the endpoint the gateway relays to."""
    upstreams: GatewayConfig | None = None
    """Where the run's model gateway sends each wire of this role's calls, with the keys; None for
    the mock model (it answers every wire at ``base_url``)."""

    def gateway_upstreams(self) -> GatewayConfig:
        """Where the run's model gateway sends this role's calls: ``upstreams``, else every wire to
        ``base_url`` (the mock model answers them all)."""
        if self.upstreams is not None:
            return self.upstreams
        assert self.base_url is not None, "the mock model resolves without a URL until it serves"
        return _upstreams(self.base_url, self.api_key, list(WIRES), responses=(None, None), messages=(None, None),
                          timeout=self.request_timeout_seconds, prices=dict(self.prices))

    def client(self, *, http: httpx.AsyncClient | None = None) -> OpenAIClient:
        """A client for this endpoint with its key and request timeout.

        Raises:
            ConfigurationError: this is the mock model and no mock server was given yet.
        """
        if self.base_url is None:
            raise ConfigurationError(f"the {self.role} role resolved to the mock model, which is not serving "
                                     "yet: start it and resolve again with mock_base_url")
        return OpenAIClient(self.base_url, api_key=self.api_key, http=http, timeout=self.request_timeout_seconds)


async def load_model_endpoint_block(name: str = DEFAULT_MODEL_BLOCK) -> ModelEndpoint | None:
    """The ``ModelEndpoint`` block called ``name``, or None when there is none.

    Raises:
        ConfigurationError: the block exists but is invalid, or the Prefect API did not answer.
    """
    if not is_block_name(name):
        raise ConfigurationError(f"{name!r} cannot name a ModelEndpoint block: use lowercase letters, "
                                 "digits and dashes")
    # The block class brings in Prefect: imported on use, like resolve's block classes.
    from prefect_agentenv.blocks.model_endpoint import ModelEndpoint

    return await load_block(ModelEndpoint, name)


async def resolve_model_endpoint(
    role: str = "agent",
    *,
    model: str | None = None,
    block_name: str = DEFAULT_MODEL_BLOCK,
    use_blocks: bool | None = None,
    mock_base_url: str | None = None,
) -> ResolvedModel:
    """Resolve the endpoint and model for ``role``: block, then settings, then the mock.

    Args:
        role: who will talk to the model: ``agent``, ``judge``, ``user`` or a custom role.
        model: a model named by the task (``judge_model``, an agent's ``model``); it wins over
            the block's role mapping and the defaults. Ignored by the mock, which is one model.
        block_name: the ModelEndpoint block to look for.
        use_blocks: consult blocks; by default only when a Prefect API is configured.
        mock_base_url: the run's mock model, when one is already serving; otherwise the mock
            resolves with ``base_url=None`` and the caller starts one.

    Raises:
        ConfigurationError: the block is invalid, or the Prefect API did not answer.
    """
    consult_blocks = prefect_api_configured() if use_blocks is None else use_blocks
    if consult_blocks:
        block = await load_model_endpoint_block(block_name)
        if block is not None:
            upstreams = _upstreams(block.base_url, block.api_key, block.base_url_wires,
                                   responses=(block.responses_base_url, block.responses_api_key),
                                   messages=(block.messages_base_url, block.messages_api_key),
                                   timeout=block.request_timeout_seconds, prices=dict(block.prices))
            return ResolvedModel(role=role, base_url=block.base_url, api_key=block.api_key,
                                 model=model or block.model_for(role), source="block",
                                 request_timeout_seconds=block.request_timeout_seconds, prices=dict(block.prices),
                                 upstreams=upstreams)
    from prefect_agentenv.settings import get_settings  # on Prefect's settings base: read on use

    settings = get_settings()
    if settings.openai_base_url:
        upstreams = _upstreams(settings.openai_base_url, settings.openai_api_key, ["chat", "responses", "messages"],
                               responses=(settings.model_responses_base_url, settings.model_responses_api_key),
                               messages=(settings.model_messages_base_url, settings.model_messages_api_key))
        return ResolvedModel(role=role, base_url=settings.openai_base_url, api_key=settings.openai_api_key,
                             model=model or DEFAULT_OPENAI_MODEL, source="settings", upstreams=upstreams)
    logger.info("no model endpoint is configured for the %s role: using the built-in mock model", role)
    return ResolvedModel(role=role, base_url=mock_base_url, model=MOCK_MODEL, is_mock=True, source="mock")


def _upstreams(base_url: str, api_key: SecretStr | None, wires: list[Wire], *,
               responses: tuple[str | None, SecretStr | None], messages: tuple[str | None, SecretStr | None],
               timeout: float = 120.0, prices: dict[str, ModelPrice] | None = None) -> GatewayConfig:
    """Each wire's upstream: its own URL when one is named (Responses with a bearer key, Messages with
    Anthropic's ``x-api-key``), else ``base_url`` when it answers that wire, else none."""
    main = Upstream(base_url=base_url, api_key=api_key, timeout_seconds=timeout)

    def own(url: str | None, key: SecretStr | None, wire: Wire, auth: AuthStyle = "bearer") -> Upstream | None:
        if url:
            return Upstream(base_url=url, api_key=key, timeout_seconds=timeout, auth=auth)
        return main if wire in wires else None

    return GatewayConfig(chat=main if "chat" in wires else None,
                         responses=own(responses[0], responses[1] or api_key, "responses"),
                         messages=own(messages[0], messages[1], "messages", "x-api-key"),
                         prices=prices or {})
