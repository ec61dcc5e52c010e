"""aggregate_verifiers: fold the rows of several verifiers into one score."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from prefect_agentenv.steps.base import Aggregator, VerifierRef, VerifierStep
from prefect_agentenv.steps.registry import StepDefinition


class AggregateVerifiersStep(VerifierStep):
    """Concatenates the rows of the named verifiers (skipped ones dropped) and aggregates them."""

    type: Literal["aggregate_verifiers"] = "aggregate_verifiers"
    verifier_ids: list[VerifierRef] = Field(min_length=1)
    """Verifiers (run by ancestors) whose rows are combined."""
    score_aggregator: Aggregator = "weighted_average"


definition = StepDefinition(AggregateVerifiersStep)
