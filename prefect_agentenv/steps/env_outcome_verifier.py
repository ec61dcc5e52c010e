"""env_outcome_verifier: check an env's end state with a verify script stored as a file artifact."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from prefect_agentenv.steps.base import Aggregator, EnvRef, PromptRef, VerifierStep
from prefect_agentenv.steps.registry import StepDefinition


class EnvOutcomeVerifierStep(VerifierStep):
    """Runs ``async def verify(mcp_url[, run]) -> rows`` in its own process against an env."""

    type: Literal["env_outcome_verifier"] = "env_outcome_verifier"
    env_id: EnvRef
    """The deployed env whose state is checked."""
    script_artifact_id: str = Field(min_length=1)
    """File artifact holding the verify script (a Python file)."""
    prompt_id: PromptRef | None = None
    """Optional PromptResponse passed to the script as ``run``."""
    timeout_seconds: float = Field(default=120, gt=0)
    """The script's process is killed after this long."""
    score_aggregator: Aggregator = "all_pass"


definition = StepDefinition(EnvOutcomeVerifierStep)
