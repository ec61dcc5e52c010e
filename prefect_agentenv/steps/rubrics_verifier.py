"""rubrics_verifier: a judge grades a reply against criteria written in plain language."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from prefect_agentenv.steps.base import Aggregator, AgentRef, PromptRef, VerifierStep
from prefect_agentenv.steps.registry import StepDefinition


class Criterion(BaseModel):
    """One thing the judge checks."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    id: str = Field(min_length=1)
    """Unique id of the criterion within the verifier."""
    criterion: str = Field(min_length=1)
    """What must be true, in plain language."""
    weight: float = 1.0
    """Weight in weighted_average; a negative weight is a penalty."""


class RubricsVerifierStep(VerifierStep):
    """Grades the PromptResponse named by prompt_id with a judge agent or a judge model."""

    type: Literal["rubrics_verifier"] = "rubrics_verifier"
    prompt_id: PromptRef
    """The PromptResponse to grade."""
    criteria: list[Criterion] = Field(min_length=1)
    agent_name: AgentRef | None = None
    """A deployed agent to judge with; when omitted a judge agent is deployed for this step."""
    judge_agent_id: str = "judge"
    """Registry id of the judge agent deployed when agent_name is omitted."""
    judge_mode: Literal["agent", "model"] = "agent"
    """'model' calls the judge model directly, without an agent (faster, cannot open files)."""
    judge_model: str | None = None
    output_format: Literal["rubric_binary", "rubric_partial"] = "rubric_binary"
    score_aggregator: Aggregator = "all_pass"
    use_trajectory: bool = True
    """Show the judge the agent's trajectory as well as its reply."""
    trajectory_filter: list[str] | None = None
    """Only these trajectory event kinds are shown to the judge."""
    grading_policy_prompt: str | None = None
    """Extra grading instructions for the judge."""
    context_facts_for_judge: list[str] | str | None = None
    """Facts the judge may rely on (for example the seeded data)."""
    judge_timeout_seconds: float = Field(default=600, gt=0)
    judge_retries: int = Field(default=3, ge=0, le=10)
    """Corrective retries when the judge's output cannot be parsed."""

    accepted_but_ignored = (
        "effort", "max_thinking_tokens", "judge_sandbox_type", "judge_priority", "default_model_api_base",
    )


definition = StepDefinition(RubricsVerifierStep)
