"""The ModelEndpoint block: which OpenAI-compatible endpoint and models agents and judges use."""

from __future__ import annotations

from typing import ClassVar, Literal

from prefect.blocks.core import Block
from pydantic import ConfigDict, Field, SecretStr

from prefect_agentenv.blocks.documentation import DOCUMENTATION_URL
from prefect_agentenv.usage import ModelPrice

MODEL_ENDPOINT_BLOCK_SLUG = "agentenv-model-endpoint"
_ALL_WIRES: tuple[Literal["chat", "responses", "messages"], ...] = ("chat", "responses", "messages")


class ModelEndpoint(Block):
    """An OpenAI-compatible endpoint and the model each role uses on it.

    Configuration only: :func:`prefect_agentenv.resolution.models.resolve_model_endpoint` reads it
    (the block named ``default`` unless told otherwise) and the protocol client talks to the
    endpoint. A role without an entry in ``roles`` uses ``default_model``.

    Example:
        Register the endpoint once, then load it by name:
        ```python
        from prefect_agentenv.blocks.model_endpoint import ModelEndpoint

        ModelEndpoint(
            base_url="https://api.openai.com/v1",
            api_key="sk-...",
            default_model="gpt-4.1-mini",
            roles={"agent": "gpt-4.1", "judge": "gpt-4.1-mini", "user": "gpt-4.1-mini"},
        ).save("default")

        endpoint = ModelEndpoint.load("default")
        judge_model = endpoint.model_for("judge")
        ```
    """

    model_config = ConfigDict(use_attribute_docstrings=True)

    _block_type_name: ClassVar[str] = "AgentEnv Model Endpoint"
    _block_type_slug: ClassVar[str] = MODEL_ENDPOINT_BLOCK_SLUG
    _documentation_url = DOCUMENTATION_URL
    _description: ClassVar[str] = (
        "An OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, LiteLLM, Ollama…) and the "
        "model used for each role: the agent under test, the judge and the simulated user."
    )
    _code_example: ClassVar[str] = '''
```python
from prefect_agentenv.blocks.model_endpoint import ModelEndpoint

endpoint = ModelEndpoint.load("BLOCK_NAME")  # usually "default"
model = endpoint.model_for("judge")
```
'''

    base_url: str = Field(min_length=1)
    """API root including its version path, e.g. https://api.openai.com/v1."""
    api_key: SecretStr | None = None
    """Bearer token sent to the endpoint; leave empty for endpoints that need none."""
    default_model: str = Field(min_length=1)
    """Model used by every role that has no entry in roles."""
    roles: dict[str, str] = Field(default_factory=dict)
    """Model per role, e.g. {"agent": "...", "judge": "...", "user": "..."}."""
    request_timeout_seconds: float = Field(default=120.0, gt=0)
    """Upper bound for one completion request, in seconds."""
    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    """Optional price table, model name to US dollars per million input and output tokens, e.g.
    {"gpt-4.1": {"input_per_million": 2.0, "output_per_million": 8.0}}: it prices the tokens an agent
    reports without a cost, in the report, the transcript and a benchmark's results."""

    responses_base_url: str | None = None
    """Where OpenAI's Responses API (Codex) goes when base_url does not serve it, e.g.
    https://api.openai.com/v1; sent responses_api_key (else api_key) as a bearer token."""
    responses_api_key: SecretStr | None = None
    """The key of responses_base_url; api_key when empty."""
    messages_base_url: str | None = None
    """Where Anthropic's Messages API (Claude Code) goes when base_url does not serve it, e.g.
    https://api.anthropic.com/v1; sent messages_api_key as Anthropic's x-api-key."""
    messages_api_key: SecretStr | None = None
    """The key of messages_base_url."""
    base_url_wires: list[Literal["chat", "responses", "messages"]] = Field(
        default_factory=lambda: list(_ALL_WIRES))
    """The model APIs base_url answers: all three for a LiteLLM gateway, ["chat", "responses"] for
    OpenAI itself. A harness whose API no upstream answers is refused at deploy with the fix."""

    def model_for(self, role: str) -> str:
        """The model configured for ``role``, else the default model."""
        return self.roles.get(role) or self.default_model
