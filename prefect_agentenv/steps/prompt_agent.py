"""prompt_agent: send a prompt to a deployed agent (or hold a conversation) and keep the reply."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from prefect_agentenv.steps.base import AgentRef, Provides, StepModel
from prefect_agentenv.steps.registry import StepDefinition


class PromptAgentStep(StepModel):
    """Prompts an agent over A2A and stores its PromptResponse under prompt_id."""

    type: Literal["prompt_agent"] = "prompt_agent"
    agent_name: AgentRef
    """The deployed agent to prompt."""
    prompt_id: Annotated[str, Provides("prompt")]
    """Key of the PromptResponse in prompt_responses."""
    prompt: str
    """The first (or only) message to the agent."""
    timeout_seconds: float = Field(default=1800, gt=0)
    """The whole exchange is cancelled after this long."""
    poll_interval_seconds: float = Field(default=0.5, gt=0)
    """How often a non-blocking A2A task is polled."""
    model: str | None = None
    max_turns: int | None = Field(default=None, ge=1)
    """Cap on the agent's model turns, sent through its agent-config extension."""
    max_turn_tokens: int | None = Field(default=None, ge=1)
    """Cap on each model response's tokens, sent through its agent-config extension."""
    max_conversation_turns: int = Field(default=1, ge=1)
    """Above 1, the reply goes to a user (agent or person) whose answer is the next turn."""
    user_agent_name: AgentRef | None = None
    """A deployed agent playing the user; answers {message, done}."""
    user_a2a_url: str | None = None
    """A person's A2A endpoint playing the user; their text is the next prompt."""

    accepted_but_ignored = (
        "system_prompt", "model_params", "effort", "max_thinking_tokens", "harness", "agentenv_tools",
        "context_id", "trajectory_output_prefix", "snapshot_config", "user_system_prompt",
        "user_model", "user_prompt",
    )

    @model_validator(mode="after")
    def _conversation_needs_a_user(self) -> PromptAgentStep:
        if self.user_agent_name and self.user_a2a_url:
            raise ValueError("give user_agent_name or user_a2a_url, not both")
        if self.max_conversation_turns > 1 and not (self.user_agent_name or self.user_a2a_url):
            raise ValueError("max_conversation_turns > 1 needs user_agent_name or user_a2a_url")
        return self


definition = StepDefinition(PromptAgentStep)
