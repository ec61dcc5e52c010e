"""register_agent_triggers: give a deployed agent triggers (urn:agentenv:triggers/v1), e.g. a stakeholder's nudges."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

from pydantic import Field, model_validator

from prefect_agentenv.context import AgentTriggerRegistration, RunContext
from prefect_agentenv.exceptions import ProtocolError, StepError
from prefect_agentenv.jsontypes import JsonObject, JsonValue
from prefect_agentenv.run_services.agents import a2a_client, deployed_agent
from prefect_agentenv.runtime.resources.run import current_run
from prefect_agentenv.steps.base import AgentRef, NameKind, StepModel
from prefect_agentenv.steps.registry import StepDefinition


class RegisterAgentTriggersStep(StepModel):
    """Registers triggers (``{id, when, actions}``, as the agent defines them) through the agent's triggers extension.

    A ``when`` of type ``env_trigger`` names an env (``env_id``): that env must be deployed by an ancestor.
    """

    type: Literal["register_agent_triggers"] = "register_agent_triggers"
    agent_name: AgentRef
    """The deployed agent to register triggers with."""
    triggers: list[JsonObject] = Field(min_length=1)
    """Triggers, each with an ``id``."""

    @model_validator(mode="after")
    def _ids(self) -> RegisterAgentTriggersStep:
        ids = [t.get("id") for t in self.triggers]
        if not all(isinstance(i, str) and i for i in ids):
            raise ValueError("every trigger needs a non-empty string id")
        if len(set(ids)) != len(ids):
            raise ValueError("trigger ids must be unique")
        return self

    def required(self) -> list[tuple[NameKind, str, tuple[str | int, ...]]]:
        """The agent, and every env an ``env_trigger`` condition names."""
        found = super().required()
        for i, trigger in enumerate(self.triggers):
            for path, env_id in _env_trigger_envs(trigger.get("when"), ("triggers", i, "when")):
                found.append(("env", env_id, (*path, "env_id")))
        return found


def _env_trigger_envs(when: JsonValue, path: tuple[str | int, ...]) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """(path, env_id) of every env_trigger condition in a (possibly all/any-nested) ``when``."""
    if not isinstance(when, dict):
        return
    env_id, nested = when.get("env_id"), when.get("of")
    if when.get("type") == "env_trigger" and isinstance(env_id, str):
        yield path, env_id
    for i, sub in enumerate(nested if isinstance(nested, list) else []):
        yield from _env_trigger_envs(sub, (*path, "of", i))


async def run(step: RegisterAgentTriggersStep, ctx: RunContext) -> RunContext:
    """POST the triggers to the agent's extension; record what it added in metadata.agent_trigger_registrations."""
    from prefect_agentenv.protocols.agentenv_ext import AgentEnvExtensions

    agent = deployed_agent(ctx, step.agent_name, step)
    try:
        ext = await AgentEnvExtensions.of(a2a_client(current_run(), agent))
        answer = await ext.register_triggers(step.triggers)
    except ProtocolError as exc:
        raise StepError(f"registering triggers with agent '{step.agent_name}': {exc}", step=step) from exc
    answered = answer.get("added")
    added: list[JsonValue] = answered if isinstance(answered, list) else [t["id"] for t in step.triggers]
    ctx.metadata.agent_trigger_registrations.append(
        AgentTriggerRegistration(step_id=step.id, agent_name=step.agent_name, added=added))
    return ctx


definition = StepDefinition(RegisterAgentTriggersStep, run)
