"""Tokens and cost: what the model calls of a prompt, a task run or a benchmark used, and prices.

A bottom-layer module (pydantic only): the run's context, the ModelEndpoint block, the benchmark
results and the steps all speak of usage in these terms.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import reduce
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from prefect_agentenv.attribute_docs import attribute_docstrings

_CONFIG = ConfigDict(extra="forbid", json_schema_extra=attribute_docstrings)


class TokenUsage(BaseModel):
    """Tokens (and cost) the model calls behind a prompt, a task run or a benchmark used."""

    model_config = _CONFIG

    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    """As the agent reported it, else priced from the model block's price table; None when neither says."""
    source: Literal["agent", "trajectory", "sum", "gateway"] = "agent"
    """Where the tokens were read: the agent's reply (A2A ``usage``), its trajectory's model events,
    a sum over prompts or runs, or the run's model gateway (every call it relayed, counted from the
    provider's own answers)."""

    def plus(self, other: TokenUsage | None) -> TokenUsage:
        """The sum of two usages; a count neither knows stays unknown."""
        if other is None:
            return self

        def add(a: float | None, b: float | None) -> float | None:
            return None if a is None and b is None else (a or 0) + (b or 0)

        cost = add(self.cost_usd, other.cost_usd)
        return TokenUsage(input_tokens=_int_or_none(add(self.input_tokens, other.input_tokens)),
                          output_tokens=_int_or_none(add(self.output_tokens, other.output_tokens)),
                          cost_usd=None if cost is None else round(cost, 6), source="sum")


class ModelPrice(BaseModel):
    """What a model costs, per million tokens, for usage the agent reports without a cost."""

    model_config = _CONFIG

    input_per_million: float = Field(ge=0)
    """US dollars per million input (prompt) tokens."""
    output_per_million: float = Field(ge=0)
    """US dollars per million output (completion) tokens."""

    def cost(self, usage: TokenUsage) -> float | None:
        """The cost of ``usage`` at these prices; None when its token counts are unknown."""
        if usage.input_tokens is None and usage.output_tokens is None:
            return None
        dollars = ((usage.input_tokens or 0) * self.input_per_million
                   + (usage.output_tokens or 0) * self.output_per_million) / 1_000_000
        return round(dollars, 6)


def _int_or_none(value: float | None) -> int | None:
    return None if value is None else int(value)


def total_usage(usages: Iterable[TokenUsage | None]) -> TokenUsage | None:
    """The sum of what is known, or None when nothing reported any usage."""
    found = [usage for usage in usages if usage is not None]
    if not found:
        return None
    return reduce(TokenUsage.plus, found[1:], found[0].model_copy(update={"source": "sum"}))
