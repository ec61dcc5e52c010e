"""Giving an agent its envs, skills and config — only through the extensions its card declares.

The rule (documented in docs/bring-your-own.md, "The configuration rule"):

* What the run fills in by itself (the default model) is sent only when the card can take it;
  otherwise it is left out without a word. Nothing the document did not ask for fails a deploy.
* What the document asks for explicitly (``env_ids``, ``skills``, ``system_prompt``, ``model``,
  ``agent_config`` fields, prompt caps) and the card offers no way to take is not sent: each
  item becomes a warning in the log and a row of ``metadata.unsupported_agent_config``, and the
  run goes on.
* A card that declares an extension and then refuses or fails the call is an error: the agent
  said it could.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from prefect_agentenv.context import DeployedAgent, DeployedEnv, RunContext, UnsupportedAgentConfig
from prefect_agentenv.exceptions import AgentTimeoutError, ProtocolError, StepError
from prefect_agentenv.jsontypes import JsonObject, JsonValue
from prefect_agentenv.run_services.skill import Skill
from prefect_agentenv.steps.base import StepModel

if TYPE_CHECKING:  # the runtime loads on use: `validate` imports step modules and stays light
    from prefect_agentenv.protocols.a2a import A2AClient
    from prefect_agentenv.protocols.agentenv_ext import AgentEnvExtensions

logger = logging.getLogger("prefect_agentenv.agents")

_NOT_DECLARED = "the agent's card does not declare the extension"
_NO_OPERATION = "the agent's card declares the extension without its {op!r} operation"
_NOT_SUPPORTED = "the agent's card does not list the field among the agent-config fields it supports"


class ConfigRequest(BaseModel):
    """What a step wants to give an agent.

    ``explicit`` holds agent-config fields the document (or a run override) asked for, keyed
    by the path reports name them by (``system_prompt``, ``agent_config.temperature``);
    ``implicit`` the ones the run fills in by default.
    """

    envs: list[DeployedEnv] = Field(default_factory=list)
    skills: list[Skill] = Field(default_factory=list)
    explicit: dict[str, tuple[str, JsonValue]] = Field(default_factory=dict)
    """``{wire field: (report path, value)}``; ``None`` values are not asked for."""
    implicit: JsonObject = Field(default_factory=dict)
    """Agent-config wire fields the run fills in by default (the agent's model)."""


Lacks = Callable[[str, str, str], None]
"""Records one thing the agent cannot take: (report path, extension URI, reason)."""


async def deliver(step: StepModel, agent: DeployedAgent, client: A2AClient,
                  request: ConfigRequest) -> list[UnsupportedAgentConfig]:
    """Send what the card can take; return (and log) what the document asked for and it cannot.

    Args:
        client: the run's A2A client of the agent (its card is read once).

    Raises:
        StepError: the agent's card cannot be read, or it declares an extension and then fails the call.
    """
    ext = await _extensions(step, agent, client)
    rows: list[UnsupportedAgentConfig] = []

    def lacks(field: str, extension: str, reason: str) -> None:
        rows.append(UnsupportedAgentConfig(step_id=step.id, agent_name=agent.agent_name, field=field,
                                           extension=extension, reason=reason))

    try:
        await _give_envs(ext, request.envs, lacks)
        await _give_skills(ext, request.skills, lacks)
        await _give_config(ext, request, lacks)
    except (ProtocolError, AgentTimeoutError) as exc:  # a silent extension endpoint times out
        raise StepError(f"configuring agent '{agent.agent_name}': {exc}", step=step) from exc
    if rows:
        logger.warning("agent %s cannot take %s (not sent; the run goes on): %s", agent.agent_name,
                       ", ".join(r.field for r in rows), "; ".join(sorted({f"{r.extension}: {r.reason}" for r in rows})))
    return rows


async def takes_config(client: A2AClient, field: str) -> bool:
    """Whether the agent's card lets agent-config set ``field`` (a card listing no fields takes any)."""
    from prefect_agentenv.protocols.agentenv_ext import AGENT_CONFIG_EXTENSION, AgentEnvExtensions

    ext = await AgentEnvExtensions.of(client)
    if _missing(ext, AGENT_CONFIG_EXTENSION, "set"):
        return False
    return bool(ext.filter_agent_config({field: True})[0])


def record(ctx: RunContext, rows: list[UnsupportedAgentConfig]) -> None:
    """Add the rows to ``metadata.unsupported_agent_config`` (the report shows them)."""
    ctx.metadata.unsupported_agent_config.extend(r for r in rows if r not in ctx.metadata.unsupported_agent_config)


async def _extensions(step: StepModel, agent: DeployedAgent, client: A2AClient) -> AgentEnvExtensions:
    from prefect_agentenv.protocols.agentenv_ext import AgentEnvExtensions

    try:
        return await AgentEnvExtensions.of(client)
    except (ProtocolError, AgentTimeoutError) as exc:
        raise StepError(f"reading the card of agent '{agent.agent_name}': {exc}", step=step) from exc


async def _give_envs(ext: AgentEnvExtensions, envs: list[DeployedEnv], lacks: Lacks) -> None:
    from prefect_agentenv.protocols.agentenv_ext import MCP_CONFIG_EXTENSION

    reason = _missing(ext, MCP_CONFIG_EXTENSION, "add")
    for env in envs:
        if reason:
            lacks(f"env_ids.{env.env_id}", MCP_CONFIG_EXTENSION, reason)
        else:
            await _give_env(ext, env)


async def _give_env(ext: AgentEnvExtensions, env: DeployedEnv) -> None:
    """Give the agent an env's MCP server. An agent that refuses it as already held (HTTP 409, as
    the AgentEnv SDK answers a URL or name it has) and lists that very server under that name has
    it: a pooled agent given the same env instance again."""
    try:
        await ext.add_mcp_server(env.mcp_url, name=env.env_id)
    except ProtocolError as exc:
        if exc.code != 409 or not await _holds(ext, env):
            raise
        logger.debug("%s already holds the MCP server %s (%s)", ext.agent, env.env_id, env.mcp_url)


async def _holds(ext: AgentEnvExtensions, env: DeployedEnv) -> bool:
    """The agent lists ``env``'s MCP server under the env's id (False when it cannot list)."""
    from prefect_agentenv.protocols.agentenv_ext import MCP_CONFIG_EXTENSION

    if _missing(ext, MCP_CONFIG_EXTENSION, "list"):
        return False
    try:
        held = await ext.list_mcp_servers()
    except ProtocolError:
        return False
    return any(entry.url == env.mcp_url and entry.name == env.env_id for entry in held)


async def _give_skills(ext: AgentEnvExtensions, skills: list[Skill], lacks: Lacks) -> None:
    from prefect_agentenv.protocols.agentenv_ext import SKILL_CONFIG_EXTENSION

    reason = _missing(ext, SKILL_CONFIG_EXTENSION, "add")
    for skill in skills:
        if reason:
            lacks(f"skills.{skill.name}", SKILL_CONFIG_EXTENSION, reason)
        else:
            await ext.add_skill(skill.name, skill.description or "", skill.content or "")


async def _give_config(ext: AgentEnvExtensions, request: ConfigRequest, lacks: Lacks) -> None:
    """Explicit fields win over implicit ones; fields the card cannot take are left out."""
    from prefect_agentenv.protocols.agentenv_ext import AGENT_CONFIG_EXTENSION

    explicit = {k: v for k, v in request.explicit.items() if v[1] is not None}
    implicit = {k: v for k, v in request.implicit.items() if v is not None and k not in explicit}
    if not explicit and not implicit:
        return
    reason = _missing(ext, AGENT_CONFIG_EXTENSION, "set")
    if reason:
        for path, _ in explicit.values():
            lacks(path, AGENT_CONFIG_EXTENSION, reason)
        return
    wanted = {**implicit, **{k: value for k, (_, value) in explicit.items()}}
    sent, dropped = ext.filter_agent_config(wanted)
    for field in dropped:
        if field in explicit:
            lacks(explicit[field][0], AGENT_CONFIG_EXTENSION, _NOT_SUPPORTED)
    if sent:
        await ext.set_agent_config(sent)


def _missing(ext: AgentEnvExtensions, uri: str, operation: str) -> str | None:
    """Why the card cannot take a call of ``uri``'s ``operation``, or None when it can."""
    if not ext.has(uri):
        return _NOT_DECLARED
    return None if ext.has(uri, operation) else _NO_OPERATION.format(op=operation)
