"""env_state_verifier: typed assertions against an env's exported state (data/get)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from prefect_agentenv.context import RunContext
from prefect_agentenv.exceptions import ProtocolError
from prefect_agentenv.grading.assertions import StateAssertion, evaluate
from prefect_agentenv.grading.verification import scored
from prefect_agentenv.run_services.clients import as_step_error, env_client
from prefect_agentenv.steps.base import EnvRef, VerifierStep
from prefect_agentenv.steps.registry import StepDefinition


class EnvStateVerifierStep(VerifierStep):
    """Checks an env's exported state with typed assertions, keeping expected vs actual as evidence."""

    type: Literal["env_state_verifier"] = "env_state_verifier"
    env_id: EnvRef
    """The deployed env whose state is exported and checked."""
    assertions: list[StateAssertion] = Field(min_length=1)
    """Typed checks of the exported state (state_match, record_count, file_present, …); one row each."""
    default_aggregator = "weighted_average"


async def run(step: EnvStateVerifierStep, ctx: RunContext) -> RunContext:
    """Export the env's state once and evaluate every assertion against it."""
    try:
        state = await env_client(ctx, step.env_id, step).export_state()
    except ProtocolError as exc:
        raise as_step_error(exc, step, f"exporting the state of env '{step.env_id}'") from exc
    rows = [evaluate(state, a) for a in step.assertions]
    ctx.metadata.verifications[step.verifier_id] = scored(
        rows, aggregator=step.score_aggregator, weight=step.weight, fmt="state_assertions", env_id=step.env_id)
    return ctx


definition = StepDefinition(EnvStateVerifierStep, run)
