"""Every model call the gateway relayed, per run: what the runner counts instead of trusting agents' reports."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from prefect_agentenv.gateway.config import Wire
from prefect_agentenv.usage import ModelPrice, TokenUsage

_CONFIG = ConfigDict(extra="forbid", frozen=True)

LimitName = Literal["tokens", "output_tokens", "cost_usd", "model_calls", "seconds", "budget_usd", "budget_tokens"]
"""Which limit refused a call: one of ``CallLimits``' fields, or a ``Budget``'s ``usd`` / ``tokens``."""

Failure = Literal["limit", "infrastructure", "request", "configuration", "replay", "client"]
"""Why a call did not end well, for whoever scores it:

* ``limit`` — the gateway refused it: the run's limit or its budget was reached (the prompt is truncated);
* ``infrastructure`` — the provider was unreachable, rate-limiting or unavailable (429, 5xx) after the
  gateway's retries, or its stream broke off: never the agent's wrong answer;
* ``request`` — the upstream refused the request itself (another 4xx);
* ``configuration`` — the gateway has no upstream for the wire;
* ``replay`` — a replay's cassette has no answer for the request (the agent did something new);
* ``client`` — the client went away before the answer ended.
"""


class CallRecord(BaseModel):
    """One call through the gateway, with the tokens the upstream reported for it."""

    model_config = _CONFIG

    run_id: str
    role: str
    wire: Wire
    path: str
    """The path the client called (``/v1/chat/completions``, ``/openai/v1/responses``, ...)."""
    requested_model: str | None
    """The ``model`` of the request, as the client asked."""
    model: str | None
    """The model the upstream says answered (else the requested one)."""
    streamed: bool
    """The answer was a server-sent event stream."""
    status: int
    """The HTTP status the client got (the upstream's, or the gateway's own: 404 no upstream, 502 unreachable)."""
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    """Input tokens read from the provider's cache (part of ``input_tokens``)."""
    cost_usd: float | None = None
    """From the gateway's price table; None when the model has no price or the tokens are unknown."""
    started_at: datetime
    latency_seconds: float
    """From the request's arrival to the answer's last byte relayed."""
    first_byte_seconds: float | None = None
    """From the request's arrival to the upstream's first byte relayed."""
    first_token_seconds: float | None = None
    """Streams only: to the first event carrying output (text, a tool call)."""
    error: str | None = None
    """Why the call did not end normally (upstream unreachable, its stream broke, the client went away)."""
    failure: Failure | None = None
    """The kind of failure (see ``Failure``); None for a call answered with a 2xx and relayed whole."""
    limit: LimitName | None = None
    """The limit or budget that refused the call (``failure == "limit"``)."""
    retries: int = 0
    """Times the gateway sent the call again after a 429, a 5xx or no answer, before relaying one."""

    @property
    def metered(self) -> bool:
        """The upstream reported the call's tokens."""
        return self.input_tokens is not None or self.output_tokens is not None


class RunTotals(BaseModel):
    """What one run's calls added up to."""

    model_config = _CONFIG

    run_id: str
    calls: int = 0
    failed: int = 0
    """Calls answered with an HTTP error or cut short."""
    refused: int = 0
    """Calls the gateway refused because a limit or the budget was reached."""
    infrastructure: int = 0
    """Calls that failed on the provider's side (rate limits, outages) after the gateway's retries."""
    retries: int = 0
    """Retries of provider 429s and 5xx the gateway absorbed over the run's calls."""
    limit_reached: LimitName | None = None
    """The limit that refused the run's first refused call: the run's prompt ended truncated."""
    unmetered: int = 0
    """Successful calls whose tokens the upstream did not report (e.g. a chat stream without
    ``include_usage``): the token totals miss them."""
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float | None = None
    """The sum over priced calls; None when none was priced."""

    def usage(self) -> TokenUsage:
        """The totals in the terms reports and benchmark results use."""
        return TokenUsage(input_tokens=self.input_tokens, output_tokens=self.output_tokens,
                          cost_usd=self.cost_usd, source="sum")


def priced(record: CallRecord, prices: dict[str, ModelPrice]) -> CallRecord:
    """``record`` with its cost, when its model has a price (answered model first, then requested)."""
    price = prices.get(record.model or "") or prices.get(record.requested_model or "")
    if price is None or not record.metered:
        return record
    usage = TokenUsage(input_tokens=record.input_tokens, output_tokens=record.output_tokens)
    return record.model_copy(update={"cost_usd": price.cost(usage)})


def sum_calls(run_id: str, records: list[CallRecord]) -> RunTotals:
    """``records`` summed (zeros for none)."""
    costs = [r.cost_usd for r in records if r.cost_usd is not None]
    return RunTotals(
        run_id=run_id, calls=len(records),
        failed=sum(1 for r in records if r.status >= 400 or r.error is not None),
        refused=sum(1 for r in records if r.failure == "limit"),
        infrastructure=sum(1 for r in records if r.failure == "infrastructure"),
        retries=sum(r.retries for r in records),
        limit_reached=next((r.limit for r in records if r.limit is not None), None),
        unmetered=sum(1 for r in records if r.status < 400 and r.error is None and not r.metered),
        input_tokens=sum(r.input_tokens or 0 for r in records),
        output_tokens=sum(r.output_tokens or 0 for r in records),
        cached_tokens=sum(r.cached_tokens or 0 for r in records),
        cost_usd=round(sum(costs), 6) if costs else None)


class CallLedger:
    """The records of every run the gateway served, until the run is forgotten."""

    def __init__(self) -> None:
        self._runs: defaultdict[str, list[CallRecord]] = defaultdict(list)

    def __repr__(self) -> str:
        return f"CallLedger({len(self._runs)} runs)"

    def add(self, record: CallRecord) -> None:
        self._runs[record.run_id].append(record)

    def calls(self, run_id: str) -> list[CallRecord]:
        """The run's calls, in the order they ended."""
        return list(self._runs.get(run_id, ()))

    def totals(self, run_id: str) -> RunTotals:
        """The run's calls summed (zeros for a run with none)."""
        return sum_calls(run_id, self._runs.get(run_id, []))

    def forget(self, run_id: str) -> None:
        """Drop a run's records (once its totals are stored elsewhere)."""
        self._runs.pop(run_id, None)
