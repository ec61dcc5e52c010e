"""modify_env_tool_access: disable or enable tools of a deployed env for a role."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from prefect_agentenv.context import RunContext, ToolAccessChange, ToolAccessState
from prefect_agentenv.exceptions import ProtocolError
from prefect_agentenv.jsontypes import JsonValue
from prefect_agentenv.run_services.clients import as_step_error, env_client
from prefect_agentenv.steps.base import EnvRef, StepModel
from prefect_agentenv.steps.registry import StepDefinition


class ModifyEnvToolAccessStep(StepModel):
    """Calls the env's disable-tool or enable-tool extension; the role's state after is recorded."""

    type: Literal["modify_env_tool_access"] = "modify_env_tool_access"
    env_id: EnvRef
    """The deployed env whose tools change."""
    action: Literal["disable", "enable"]
    """``disable`` (urn:agentenv:disable-tool/v1) or ``enable`` (urn:agentenv:enable-tool/v1)."""
    role: str = Field(min_length=1)
    """The role whose access changes (the env defines its roles)."""
    tools: list[str] = Field(min_length=1)
    """Tool names."""


async def run(step: ModifyEnvToolAccessStep, ctx: RunContext) -> RunContext:
    """Ask the env to change the role's access; append what it answers to metadata.tool_access_changes."""
    client = env_client(ctx, step.env_id, step)
    try:
        state = await client.set_tool_access(step.action, step.role, step.tools)
    except ProtocolError as exc:
        raise as_step_error(exc, step, f"{step.action} tools of env '{step.env_id}' for role '{step.role}'") from exc
    after = ToolAccessState(disabled=_listed(state.get("disabled")), allowed=_listed(state.get("allowed")))
    ctx.metadata.tool_access_changes.append(ToolAccessChange(
        step_id=step.id, env_id=step.env_id, action=step.action, role=step.role, tools_requested=list(step.tools),
        role_state_after=after))
    return ctx


definition = StepDefinition(ModifyEnvToolAccessStep, run)


def _listed(value: JsonValue) -> list[JsonValue]:
    """A list the env reported, or an empty one when it reported none (or something else)."""
    return value if isinstance(value, list) else []
