"""The run's model endpoint in the variables an AgentEnv wrapper reads.

Every wrapper reads ``LITELLM_BASE_URL`` and ``LITELLM_API_KEY`` (its image is started with an
AgentEnv ``[model]`` block, usually a LiteLLM gateway) and appends its own path: OpenCode
``/v1/chat/completions`` unless the base ends in ``/v1``, Codex ``/openai/v1/responses``, Claude
Code ``/v1/messages``, pi and OpenHands ``/chat/completions``. The endpoints here are configured
as OpenAI-compatible bases (``…/v1``), so each harness gets the form its wrapper expects.
"""

from __future__ import annotations

from prefect_agentenv.agents.harnesses.catalog import BaseUrlForm, Harness

NO_KEY = "no-key"
"""Sent as the key to an endpoint configured without one: Codex refuses to start with its key
variable unset, and a local gateway or the mock model ignores it."""


def litellm_base_url(base_url: str, form: BaseUrlForm) -> str:
    """``base_url`` as a wrapper of ``form`` wants it (see :data:`~.catalog.BaseUrlForm`)."""
    base = base_url.rstrip("/")
    if form == "root" and base.endswith("/v1"):
        return base[: -len("/v1")]
    return base


def model_env(harness: Harness, *, base_url: str, api_key: str | None, model: str) -> dict[str, str]:
    """The variables that point ``harness``'s wrapper at the endpoint, with ``model`` as its default model.

    The key travels only in the child's environment (never in argv, a log or a report).
    """
    env = {"LITELLM_BASE_URL": litellm_base_url(base_url, harness.base_url), "LITELLM_API_KEY": api_key or NO_KEY}
    if harness.model_variable is not None:
        env[harness.model_variable] = model
    return env
