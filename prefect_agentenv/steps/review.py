"""review: a human gate; the flow run pauses until a reviewer approves or rejects it in the Prefect UI."""

from __future__ import annotations

import logging
from typing import Literal

from pydantic import Field

from prefect_agentenv.context import Review, RunContext
from prefect_agentenv.exceptions import AgentTimeoutError, StepError
from prefect_agentenv.steps.base import StepModel
from prefect_agentenv.steps.registry import StepDefinition

logger = logging.getLogger("prefect_agentenv.review")


class ReviewStep(StepModel):
    """Pauses the flow run (Prefect's pause with input) until a reviewer approves or rejects it.

    Place it after the work to review (a prompt, collected files) and before what should only
    happen once it is approved. A rejection fails the step, so its dependents do not run.
    """

    type: Literal["review"] = "review"
    label: str | None = None
    """What the reviewer is asked to look at (shown in the logs; the step id when omitted)."""
    timeout_seconds: float = Field(default=10800, gt=0)
    """The step fails when nobody answers within this long (3 hours by default, as in AgentEnv)."""
    poll_interval_seconds: float = Field(default=5, gt=0)
    """How often the paused run checks whether it was resumed."""


async def run(step: ReviewStep, ctx: RunContext) -> RunContext:
    """Pause with a ReviewDecision form; record the answer; a rejection fails the step."""
    # Prefect's pause machinery is loaded on use: step modules are imported by `validate`, which stays light.
    from prefect.context import FlowRunContext
    from prefect.exceptions import FlowPauseTimeout
    from prefect.flow_runs import apause_flow_run

    from prefect_agentenv.run_services.review_input import ReviewDecision

    flow_run = FlowRunContext.get()
    if flow_run is None or flow_run.flow_run is None:
        raise StepError("a review pauses a Prefect flow run, and this run has none: run the task with "
                        "`prefect-agentenv run` or a deployment", step=step)
    label = step.label or step.id
    logger.warning("review '%s' is waiting: resume flow run %s in the Prefect UI (approve or reject, with a note)",
                   label, flow_run.flow_run.id)
    try:
        decision = await apause_flow_run(wait_for_input=ReviewDecision, timeout=int(step.timeout_seconds),
                                        poll_interval=int(max(1, step.poll_interval_seconds)), key=f"review-{step.id}")
    except FlowPauseTimeout:
        raise AgentTimeoutError(f"review '{label}' got no answer within {step.timeout_seconds:g}s",
                                step=step) from None
    except RuntimeError as exc:  # Prefect refused the pause (for example a run that cannot be paused)
        raise StepError(f"review '{label}' could not pause the flow run: {exc}", step=step) from None
    record = Review(label=label, approved=decision.approve, note=decision.note)
    reviews = ctx.metadata.reviews
    reviews[step.id] = record
    if not decision.approve:
        raise StepError(f"review '{label}' was rejected" + (f": {decision.note}" if decision.note else ""),
                        step=step, context=ctx)
    return ctx


definition = StepDefinition(ReviewStep, run)
