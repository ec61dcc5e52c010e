"""aggregate_verifiers: fold the rows of several verifiers into one score."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from prefect_agentenv.context import RunContext
from prefect_agentenv.exceptions import NotInContextError
from prefect_agentenv.grading.verification import Verification, scored, skipped
from prefect_agentenv.steps.base import VerifierRef, VerifierStep
from prefect_agentenv.steps.registry import StepDefinition


class AggregateVerifiersStep(VerifierStep):
    """Concatenates the rows of the named verifiers (skipped ones dropped) and aggregates them."""

    type: Literal["aggregate_verifiers"] = "aggregate_verifiers"
    rows_from_output = True
    verifier_ids: list[VerifierRef] = Field(min_length=1)
    """Verifiers (run by ancestors) whose rows are combined."""
    default_aggregator = "weighted_average"


async def run(step: AggregateVerifiersStep, ctx: RunContext) -> RunContext:
    """Concatenate the rows of the named verifiers (skipped ones dropped) and aggregate them."""
    verifications = ctx.metadata.verifications
    missing = [v for v in step.verifier_ids if v not in verifications]
    if missing:
        raise NotInContextError(f"Verifier(s) {', '.join(missing)} not found in context.metadata.verifications",
                                step=step)
    read = {vid: Verification.read(verifications[vid]) for vid in step.verifier_ids}
    used = [v for v in step.verifier_ids if not read[v].skipped]
    rows = [{**row.model_dump(), "id": f"{vid}.{row.id}", "verifier_id": vid} for vid in used for row in read[vid].results]
    if not rows:
        verifications[step.verifier_id] = skipped("every aggregated verifier was skipped", weight=step.weight,
                                                  fmt="aggregate", verifier_ids=step.verifier_ids)
    else:
        verifications[step.verifier_id] = scored(rows, aggregator=step.score_aggregator, weight=step.weight,
                                                 fmt="aggregate", verifier_ids=used)
    return ctx


definition = StepDefinition(AggregateVerifiersStep, run)
