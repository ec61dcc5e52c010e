"""What a rollout leaves: its segments (turns), the receipts of messages sent, and the scored Trace."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from prefect_agentenv.attribute_docs import attribute_docstrings
from prefect_agentenv.jsontypes import JsonObject

StopReason = Literal["error", "timeout", "max_turns", "max_turn_tokens", "truncated"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=attribute_docstrings)


class Segment(_Model):
    """One turn: the messages delivered to the agent and what it answered (it may have made
    several model and tool calls in between)."""

    index: int
    """0 for the opening turn, then 1, 2…"""
    messages: list[str] = Field(default_factory=list)
    """What was delivered at the start of this turn (queued messages first, in order)."""
    last_reply: str = ""
    """The agent's answer."""
    state: str = "unknown"
    """The A2A task state the turn ended in."""
    tool_call_count: int | None = None
    is_truncated: bool = False
    is_timeout: bool = False
    error: str | None = None
    terminated: bool = False
    """The rollout is over: further turns return an empty terminated segment."""
    stop_reason: StopReason | None = None

    @property
    def text(self) -> str:
        return self.last_reply


class Receipt(_Model):
    """Whether a message sent with ``Interaction.send`` was accepted for delivery (not whether the
    agent has acted on it)."""

    message_id: str
    mode: Literal["queue", "steer"]
    accepted: bool
    status: Literal["queued", "delivered", "rejected", "cancelled"]
    reason: str | None = None


class Trace(_Model):
    """A finished rollout and its score."""

    task_id: str
    prompt: str | None = None
    reply: str = ""
    """The agent's last answer."""
    turns: list[Segment] = Field(default_factory=list)
    tool_calls: list[JsonObject] = Field(default_factory=list)
    """The tool calls of the agent's trajectory (events as the agent shared them), when it shares one."""
    tool_call_count: int = 0
    rewards: dict[str, float | None] = Field(default_factory=dict)
    """Each verifier's score by verifier id (None for a verifier that was skipped)."""
    reward: float | None = None
    """The task's reward: the weighted mean of the verifiers' scores (see ``skip_policy``)."""
    verifications: dict[str, JsonObject] = Field(default_factory=dict)
    """Each verifier's rows, as a task run's ``metadata.verifications``."""
    is_truncated: bool = False
    """The run was cut off by a turn or token cap, or its last response was."""
    is_timeout: bool = False
    """The rollout's deadline expired before scoring."""
    info: JsonObject = Field(default_factory=dict)
    """``scoring`` (mode, attempts, network), ``scoring_skipped`` (``truncated``/``timeout``),
    ``stop_reason``, ``error``."""
