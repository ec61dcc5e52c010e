"""Limits per run and budgets across runs: what the gateway refuses the next call for.

A run's limits (``CallLimits``) are shared by every token issued to that run; a ``Budget`` is
shared by every run it is attached to (a benchmark run's task runs). Both are checked when a call
arrives and counted when it ends: a call in flight when a limit is crossed finishes and is counted;
only the calls after it are refused. ``model_calls`` is the exception: a call counts against it
when it is let through, so that calls started together cannot pass the limit.

Counting is in this process: one gateway, shared by the runs of a worker. A budget that must hold
across several workers needs a shared counter above it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from prefect_agentenv.attribute_docs import attribute_docstrings
from prefect_agentenv.gateway.ledger import CallRecord, LimitName


class CallLimits(BaseModel):
    """What one run's model calls may use in all (every field optional: None is no limit).

    Tokens are input plus output tokens as the upstream reported them; cost is from the price table
    (a call without a price adds nothing to it); seconds run from the moment the limits were attached.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=attribute_docstrings)

    tokens: int | None = Field(default=None, gt=0)
    """Input plus output tokens over all the run's calls."""
    output_tokens: int | None = Field(default=None, gt=0)
    """Output tokens over all the run's calls."""
    cost_usd: float | None = Field(default=None, gt=0)
    """US dollars over all the run's priced calls."""
    model_calls: int | None = Field(default=None, gt=0)
    """Completion calls let through."""
    seconds: float | None = Field(default=None, gt=0)
    """Wall-clock seconds from the limits' attachment; a call arriving later is refused."""


class Spent(BaseModel):
    """What a run or a budget has used so far, as counted by the gateway."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    calls: int = 0
    """Calls let through (refused ones are not counted)."""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    """From the price table; unpriced calls add nothing."""

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def plus(self, record: CallRecord) -> Spent:
        """This, with an ended call's tokens and cost added."""
        return self.model_copy(update={
            "input_tokens": self.input_tokens + (record.input_tokens or 0),
            "output_tokens": self.output_tokens + (record.output_tokens or 0),
            "cost_usd": self.cost_usd + (record.cost_usd or 0.0)})


class Budget:
    """A run-wide budget (US dollars and/or tokens), shared by every run it is attached to at issue.

    Example:
        ```python
        budget = Budget(usd=25.0)
        token = gateway.issue(task_run_id, "agent", budget=budget)   # one budget, many task runs
        ...
        if budget.exhausted:   # start no new task run
            ...
        ```
    """

    def __init__(self, *, usd: float | None = None, tokens: int | None = None) -> None:
        if usd is None and tokens is None:
            raise ValueError("a budget needs usd, tokens or both")
        if (usd is not None and usd <= 0) or (tokens is not None and tokens <= 0):
            raise ValueError("a budget's usd and tokens must be positive")
        self.usd, self.tokens = usd, tokens
        self._spent = Spent()

    def __repr__(self) -> str:
        return f"Budget(usd={self.usd}, tokens={self.tokens}, spent={self._spent!r})"

    @classmethod
    def counting(cls) -> Budget:
        """A budget with no bound yet: it counts what its runs spend and refuses nothing, so a bound
        set on it later (a benchmark's budget set while it runs) counts the calls made before."""
        budget = cls.__new__(cls)
        budget.usd, budget.tokens, budget._spent = None, None, Spent()
        return budget

    def spent(self) -> Spent:
        """What the runs under this budget have used so far."""
        return self._spent

    @property
    def exhausted_by(self) -> LimitName | None:
        """``budget_usd`` or ``budget_tokens`` once spent, else None."""
        if self.usd is not None and self._spent.cost_usd >= self.usd:
            return "budget_usd"
        if self.tokens is not None and self._spent.tokens >= self.tokens:
            return "budget_tokens"
        return None

    @property
    def exhausted(self) -> bool:
        """No further call under this budget will be let through."""
        return self.exhausted_by is not None

    def count(self, record: CallRecord) -> None:
        """Add an ended call."""
        self._spent = self._spent.plus(record)

    def admit(self) -> None:
        """Count a call let through."""
        self._spent = self._spent.model_copy(update={"calls": self._spent.calls + 1})


@dataclass
class _RunLimit:
    limits: CallLimits | None = None
    budget: Budget | None = None
    since: float = field(default_factory=time.monotonic)
    spent: Spent = field(default_factory=Spent)
    reached: LimitName | None = None
    """The limit that refused the run's first refused call."""

    def over(self) -> LimitName | None:
        """The first of the run's limits, then its budget's, already reached."""
        limits, spent = self.limits, self.spent
        if limits is not None:
            checks: tuple[tuple[LimitName, float | None, float], ...] = (
                ("model_calls", limits.model_calls, spent.calls), ("tokens", limits.tokens, spent.tokens),
                ("output_tokens", limits.output_tokens, spent.output_tokens),
                ("cost_usd", limits.cost_usd, spent.cost_usd),
                ("seconds", limits.seconds, time.monotonic() - self.since))
            for name, limit, used in checks:
                if limit is not None and used >= limit:
                    return name
        return self.budget.exhausted_by if self.budget is not None else None


class LimitBook:
    """The limits and budget of each run, what each run has used, and which limit stopped it."""

    def __init__(self) -> None:
        self._runs: dict[str, _RunLimit] = {}

    def __repr__(self) -> str:
        return f"LimitBook({len(self._runs)} runs)"

    def attach(self, run_id: str, limits: CallLimits | None, budget: Budget | None) -> None:
        """Set the run's limits (replacing earlier ones, starting their clock) and/or its budget."""
        run = self._runs.setdefault(run_id, _RunLimit())
        if limits is not None:
            run.limits, run.since = limits, time.monotonic()
        if budget is not None:
            run.budget = budget

    def admit(self, run_id: str) -> LimitName | None:
        """Let a new call of the run through (and count it), or name the limit that refuses it."""
        run = self._runs.get(run_id)
        if run is None:
            return None
        reached = run.over()
        if reached is not None:
            run.reached = run.reached or reached
            return reached
        run.spent = run.spent.model_copy(update={"calls": run.spent.calls + 1})
        if run.budget is not None:
            run.budget.admit()
        return None

    def count(self, record: CallRecord) -> None:
        """Add an ended call (priced) to its run and the run's budget."""
        run = self._runs.get(record.run_id)
        if run is None or record.limit is not None:
            return
        run.spent = run.spent.plus(record)
        if run.budget is not None:
            run.budget.count(record)

    def reached(self, run_id: str) -> LimitName | None:
        """The limit that refused one of the run's calls (the first one), or None."""
        run = self._runs.get(run_id)
        return None if run is None else run.reached

    def spent(self, run_id: str) -> Spent:
        """What the run has used, as its limits count it."""
        run = self._runs.get(run_id)
        return Spent() if run is None else run.spent

    def forget(self, run_id: str) -> None:
        """Drop the run's limits and counts (its budget keeps what the run spent)."""
        self._runs.pop(run_id, None)
