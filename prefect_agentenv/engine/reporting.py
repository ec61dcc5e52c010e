"""Building a task run's report from what its schedule did, with every secret value masked."""

from __future__ import annotations

from prefect_agentenv.context import RunContext
from prefect_agentenv.engine.scheduler import ScheduleResult
from prefect_agentenv.gateway.ledger import CallRecord, RunTotals, sum_calls
from prefect_agentenv.grading.outcome import SkipPolicy, task_outcome
from prefect_agentenv.results.task_report import ModelCalls, ScoringSummary, TaskReport
from prefect_agentenv.runtime.resources.stop import DESCRIPTIONS
from prefect_agentenv.runtime.resources.teardown import TeardownRecord
from prefect_agentenv.transcript import Transcript
from prefect_agentenv.usage import TokenUsage, total_usage


def build_report(
    *,
    task_id: str,
    flow_run_id: str | None,
    result: ScheduleResult | None,
    started_at: str,
    duration_s: float,
    teardown: list[TeardownRecord],
    warnings: list[str],
    error: str | None = None,
    timed_out: bool = False,
    secrets: set[str] | None = None,
    skip_policy: SkipPolicy = "zero",
    transcript: Transcript | None = None,
    scoring: ScoringSummary | None = None,
    model_calls: list[CallRecord] | None = None,
    run_id: str = "",
) -> TaskReport:
    """Assemble the report of a run, with every secret value redacted."""
    context = result.context if result else RunContext()
    crashed = [t for t in teardown if t.crashed]
    stop_reason = result.stopped if result else None
    if stop_reason and not error:
        error = f"the run was {DESCRIPTIONS.get(stop_reason, stop_reason)}; every step in flight was stopped"
    failed = (error is not None or timed_out or bool(crashed) or bool(stop_reason)
              or (result is not None and result.fatal is not None))
    if result and result.fatal and not error:
        error = f"step '{result.fatal.id}' failed: {result.fatal.error}"
    if crashed:
        # An env or agent that died under the run explains whatever else failed: say it first.
        died = "; ".join(f"{t.label}: exit code {t.exit_code}" + (f", stopped by its {t.limit}" if t.limit else "")
                         for t in crashed)
        error = f"exited on its own during the run: {died}" + (f" (then {error})" if error else "")
    outcome, score = task_outcome(context.metadata.verifications, failed=failed, timed_out=timed_out,
                                  skip_policy=skip_policy, tolerated_failures=len(context.metadata.failed_steps))
    calls = model_calls_of(model_calls, context, run_id)
    if calls is not None and calls.mismatch:
        warnings = [*warnings, calls.mismatch]
    report = TaskReport(
        task_id=task_id,
        flow_run_id=flow_run_id,
        status="failed" if failed else "completed",
        outcome=outcome,
        score=score,
        started_at=started_at,
        duration_s=round(duration_s, 3),
        context=context,
        steps=list(result.records.values()) if result else [],
        teardown=teardown,
        warnings=warnings + _unsupported_config_warnings(context),
        error=error,
        stop_reason=stop_reason,
        scoring=scoring,
        transcript=transcript,
        model_calls=calls,
    )
    report._secrets = frozenset(secrets or ())
    # Read back from what it writes: the report handed on holds no secret either, and is a copy.
    return TaskReport.model_validate(report.model_dump(mode="json"))


def _unsupported_config_warnings(context: RunContext) -> list[str]:
    """One warning per thing the document asked to give an agent that its card could not take."""
    return [f"step '{r.step_id}': agent '{r.agent_name}' cannot take {r.field} ({r.extension}: {r.reason}); "
            "it was not sent" for r in context.metadata.unsupported_agent_config]


MISMATCH_RATIO = 0.10
"""How far (as a share of the gateway's count) the agents' own token figures may be from the gateway's
before the report says so: trajectories count a little differently (cached input, retries)."""


def model_calls_of(calls: list[CallRecord] | None, context: RunContext, run_id: str) -> ModelCalls | None:
    """The run's model calls as its gateway counted them, beside what the agents reported."""
    if not calls:
        return None
    roles = sorted({call.role for call in calls})
    by_role = {role: sum_calls(run_id, [c for c in calls if c.role == role]) for role in roles}
    reported = total_usage(response.usage for response in context.prompt_responses.values())
    return ModelCalls(totals=sum_calls(run_id, calls), by_role=by_role, reported=reported,
                      mismatch=_mismatch(reported, by_role.get("agent")), calls=calls)


def _mismatch(reported: TokenUsage | None, counted: RunTotals | None) -> str | None:
    """Why the agents' own token figures disagree with the gateway's, when they do."""
    if reported is None or counted is None or counted.unmetered:
        return None
    for name, theirs, ours in (("input", reported.input_tokens, counted.input_tokens),
                               ("output", reported.output_tokens, counted.output_tokens)):
        if theirs is not None and abs(theirs - ours) > max(MISMATCH_RATIO * ours, 1):
            return (f"the agents reported {theirs} {name} tokens, the model gateway counted {ours}: "
                    "the gateway's count is the one kept")
    return None
