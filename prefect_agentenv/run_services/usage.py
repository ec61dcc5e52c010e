"""The tokens and cost behind one prompt: what the agent reported, else what its trajectory shows,
priced from the model block's price table when the agent gave no cost.

AgentEnv's wrappers report usage unevenly: pi and OpenHands put tokens (and a cost, when their
model has prices) in the reply's ``usage`` data part; OpenCode, Codex CLI and Claude Code report
only the tool-call count there, and their tokens are in the trajectory's model events.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.run_services.agents import model_for
from prefect_agentenv.runtime.resources.run import RunResources
from prefect_agentenv.transcript.build import tokens
from prefect_agentenv.usage import ModelPrice, TokenUsage


def prompt_usage(reported: JsonObject, events: Sequence[Any] | None, price: ModelPrice | None) -> TokenUsage | None:
    """The usage of one prompt, or None when neither the agent nor its trajectory says anything."""
    usage = _reported(reported)
    if usage is None and events:
        counted = tokens(events)
        if counted is not None:
            usage = TokenUsage(input_tokens=counted.prompt, output_tokens=counted.completion, source="trajectory")
    if usage is not None and usage.cost_usd is None and price is not None:
        usage = usage.model_copy(update={"cost_usd": price.cost(usage)})
    return usage


def _reported(usage: JsonObject) -> TokenUsage | None:
    """The A2A reply's ``usage`` (AgentEnv's ``Usage``: input_tokens, output_tokens, cost_usd)."""
    numbers = {name: usage.get(name) for name in ("input_tokens", "output_tokens")}
    known = {k: int(v) for k, v in numbers.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    cost = usage.get("cost_usd")
    cost_usd = float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None
    if not known and cost_usd is None:
        return None
    return TokenUsage(**known, cost_usd=cost_usd, source="agent")


async def price_of(run: RunResources, model: str | None) -> ModelPrice | None:
    """The price of ``model`` in the agent role's endpoint's price table (never starts a mock model)."""
    if model is None:
        return None
    endpoint = await model_for(run, "agent", start_mock=False, route=False)
    return endpoint.prices.get(model)
