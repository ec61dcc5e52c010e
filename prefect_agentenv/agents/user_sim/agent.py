"""The user simulator's backend: scripted user turns answered as ``{message, done}``."""

from __future__ import annotations

import json
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from prefect_agentenv.agents.server import BASE_CONFIG_FIELDS, AgentBackend, AgentFailure, Turn, TurnResult

THANKS = "Thank you, that is all I needed."


class UserScript(BaseModel):
    """The simulator's part of the agent-config."""

    model_config = ConfigDict(extra="ignore")

    replies: list[str] = Field(default_factory=list)
    done_after: int | None = Field(default=None, ge=1)

    def answer(self, turn: int) -> tuple[str, bool]:
        """The user's message at ``turn`` (1-based) and whether the conversation ends there."""
        message = self.replies[turn - 1] if turn <= len(self.replies) else THANKS
        done_after = self.done_after if self.done_after is not None else len(self.replies) + 1
        return message, turn >= done_after


class UserSimulator(AgentBackend):
    """Answers each assistant reply with the next scripted user message, then says done."""

    name = "user-sim"
    description = "Plays the user in a conversation: answers each reply with {message, done} as JSON text."
    config_fields: ClassVar[tuple[str, ...]] = (*BASE_CONFIG_FIELDS, "replies", "done_after")

    async def respond(self, turn: Turn) -> TurnResult:
        try:
            script = UserScript.model_validate(self.state.config)
        except ValidationError as exc:
            raise AgentFailure(f"the user-sim configuration is invalid: {exc}", error_type="bad_config") from exc
        message, done = script.answer(turn.number)
        turn.trajectory.record("model", model="user-sim", turn=turn.number)
        return TurnResult(json.dumps({"message": message, "done": done}), data={"message": message, "done": done})
