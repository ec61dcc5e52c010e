"""A benchmark run's outcome, decided once: its verdict, exit code, one line and Prefect state.

The verdicts come in one order, each making the later ones moot: infrastructure (too many task
runs failed for it: the scores mostly measure the setup), budget (a verdict on part of the tasks
would mislead), the judge gate (a score resting on an untrusted judge makes a score gate moot),
then the score gate. The flow's final state, the summary's verdict lines and the CLI's exit code
and line all read the same :class:`RunOutcome`, so the Prefect UI never shows a green Completed
for a run the command line failed.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from prefect_agentenv.exit_codes import ExitCode
from prefect_agentenv.results.comparison.gate import GateResult
from prefect_agentenv.results.store.benchmark_result import BenchmarkRunResult

Verdict = Literal["ran", "infrastructure", "budget", "judge_gate", "gate", "nothing_ran"]


class RunOutcome(BaseModel):
    """How a finished benchmark run ends."""

    verdict: Verdict
    exit_code: ExitCode
    line: str | None = None
    """The one line a failing verdict prints on stderr (``gate failed: …``); ``None`` when it ran."""
    state_name: str
    """The name of the flow run's final Prefect state: ``Completed``, or one that says why it failed."""
    note: str | None = None
    """A line for a run that passed a gate (``gate passed: …``), printed on stdout."""

    @property
    def failed(self) -> bool:
        """Whether the flow run ends Failed (every non-zero exit does)."""
        return self.exit_code != ExitCode.OK


def decide(*, infrastructure_error: str | None, not_run: int, judge_gate: str | None, gate: GateResult | None,
           total: int, run_id: str) -> RunOutcome:
    """The first verdict that holds, in the order the module docstring gives."""
    if infrastructure_error:
        return RunOutcome(verdict="infrastructure", exit_code=ExitCode.INFRASTRUCTURE, state_name="Infrastructure failed",
                          line=f"the benchmark failed: {infrastructure_error}")
    if not_run:
        return RunOutcome(verdict="budget", exit_code=ExitCode.BUDGET, state_name="Budget spent",
                          line=f"budget spent: {not_run} task run(s) not run; resume with --resume {run_id} and a "
                               "larger budget")
    if judge_gate is not None:
        return RunOutcome(verdict="judge_gate", exit_code=ExitCode.JUDGE_GATE, state_name="Judge gate failed",
                          line=f"judge gate failed: {judge_gate}")
    if gate is not None and not gate.passed:
        return RunOutcome(verdict="gate", exit_code=ExitCode.GATE, state_name="Gate failed",
                          line=f"gate failed: {gate.reason}")
    if total == 0:
        return RunOutcome(verdict="nothing_ran", exit_code=ExitCode.FAILED, state_name="Failed", line="no task ran")
    note = f"gate passed: {gate.reason}" if gate is not None else None
    return RunOutcome(verdict="ran", exit_code=ExitCode.OK, state_name="Completed", note=note)


def outcome_of(result: BenchmarkRunResult) -> RunOutcome:
    """The outcome of a run as its result records it (the flow's and the CLI's reading)."""
    return decide(infrastructure_error=result.infrastructure_error, not_run=result.summary.counts.not_run,
                  judge_gate=result.judge_gate, gate=result.gate, total=result.summary.counts.total,
                  run_id=result.run_id)


def verdict_markdown(outcome: RunOutcome) -> str:
    """The summary's verdict line under its tables: why a failing run failed, or that a gate passed."""
    if outcome.line is not None:
        return f"\n\n**{outcome.state_name}:** {outcome.line.split(': ', 1)[-1]}\n"
    return f"\n\n**Gate passed:** {outcome.note.split(': ', 1)[-1]}\n" if outcome.note else ""
