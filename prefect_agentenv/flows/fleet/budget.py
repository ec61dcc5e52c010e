"""A benchmark run's budget for model calls: counted two ways, stopped at the first that says so.

* In this process, the task runs' model gateways count every call against one ``gateway.Budget``:
  once it is spent they refuse the next call of any task run still going (its prompt ends truncated).
* Across a fleet (task runs on a work pool's workers, each with its own gateway), the usage each
  finished task run's report records is added up here, so no new task run starts once that sum
  reaches the budget. A fleet's task runs in flight finish under their own limits.

A task run not started because the budget was spent is recorded as ``not_run: budget``: UNSCORED,
in no mean, counted apart, and run by a resume.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from prefect_agentenv.documents.benchmarks.document import RunBudget
from prefect_agentenv.documents.compile import ExpandedTask
from prefect_agentenv.grading.outcome import Outcome
from prefect_agentenv.results import RunKey, TaskResult
from prefect_agentenv.usage import TokenUsage

if TYPE_CHECKING:
    from prefect_agentenv.gateway.limits import Budget

Spent = Literal["usd", "tokens"]


class RunSpend:
    """What a benchmark run may spend and has spent, by both counts."""

    def __init__(self, budget: RunBudget, gateway: Budget | None = None) -> None:
        from prefect_agentenv.gateway.limits import Budget

        self.budget = budget
        self.gateway: Budget = gateway or Budget(usd=budget.usd, tokens=budget.tokens)
        """Shared by the gateways of the task runs in this process (``gateway``: one that has counted
        their calls since the run started, bound now)."""
        self.gateway.usd, self.gateway.tokens = budget.usd, budget.tokens
        self.reported = TokenUsage(input_tokens=0, output_tokens=0, cost_usd=0.0, source="sum")
        """Summed from finished task runs' results (a fleet's included)."""

    def __repr__(self) -> str:
        return f"RunSpend({self.budget!r})"

    def add(self, usage: TokenUsage | None) -> None:
        """Count a finished task run's model usage."""
        self.reported = self.reported.plus(usage)

    def spent_by(self) -> Spent | None:
        """Which part of the budget is spent (``usd`` or ``tokens``), or None while some is left."""
        exhausted = self.gateway.exhausted_by
        if exhausted is not None:
            return "usd" if exhausted == "budget_usd" else "tokens"
        tokens = (self.reported.input_tokens or 0) + (self.reported.output_tokens or 0)
        if self.budget.usd is not None and (self.reported.cost_usd or 0.0) >= self.budget.usd:
            return "usd"
        if self.budget.tokens is not None and tokens >= self.budget.tokens:
            return "tokens"
        return None

    def describe(self, spent: Spent) -> str:
        """One line: which budget was spent."""
        if spent == "usd":
            return f"the run's budget of ${self.budget.usd:g} was spent"
        return f"the run's budget of {self.budget.tokens:,} tokens was spent"


def not_run_result(key: RunKey, task: ExpandedTask, why: str) -> TaskResult:
    """The result of a run key the budget left unstarted."""
    return TaskResult(task_id=key.task_id, seed_index=key.seed_index, seed=dict(task.seed_row or {}), epoch=key.epoch,
                      tags=list(task.tags), status="not_run", outcome=Outcome.UNSCORED, score=None,
                      error=f"not run: {why}", not_run="budget", cell=key.cell)
