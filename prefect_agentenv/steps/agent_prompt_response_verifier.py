"""agent_prompt_response_verifier: deterministic checks on a reply's text."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from prefect_agentenv.steps.base import Aggregator, PromptRef, VerifierStep
from prefect_agentenv.steps.registry import StepDefinition


class RegexCheck(BaseModel):
    """A pattern the reply must contain."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    pattern: str
    """Python regular expression searched for in the reply."""
    flags: list[Literal["IGNORECASE", "MULTILINE", "DOTALL"]] = Field(default_factory=list)


class AgentPromptResponseVerifierStep(VerifierStep):
    """Scores a reply by the substrings and patterns it contains."""

    type: Literal["agent_prompt_response_verifier"] = "agent_prompt_response_verifier"
    prompt_id: PromptRef
    """The PromptResponse to check."""
    response_contains: list[str] = Field(default_factory=list)
    """Substrings that must appear in the reply."""
    case_sensitive: bool = False
    """Whether response_contains compares case."""
    response_regex_present: list[RegexCheck] = Field(default_factory=list)
    score_aggregator: Aggregator = "all_pass"

    @model_validator(mode="after")
    def _has_a_check(self) -> AgentPromptResponseVerifierStep:
        if not self.response_contains and not self.response_regex_present:
            raise ValueError("give response_contains or response_regex_present (nothing to check)")
        return self


definition = StepDefinition(AgentPromptResponseVerifierStep)
