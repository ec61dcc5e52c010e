"""deploy_agent: start a registered A2A agent in its own sandbox and connect it to envs."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, field_validator

from prefect_agentenv.context import DeployedAgent, DeployedEnv, RunContext
from prefect_agentenv.exceptions import StepError
from prefect_agentenv.jsontypes import JsonObject, JsonValue
from prefect_agentenv.run_services.agents import a2a_client, effective_agent_id, start_agent
from prefect_agentenv.run_services.clients import deployed_env
from prefect_agentenv.run_services.skill import Skill
from prefect_agentenv.runtime.confinement.network_allow import Widening, checked_widening
from prefect_agentenv.runtime.resources.run import RunResources, current_run
from prefect_agentenv.steps.base import DEFAULT_AGENT_NAME, EnvRef, Provides, StepModel
from prefect_agentenv.steps.registry import StepDefinition

if TYPE_CHECKING:  # the runtime loads on use: `validate` imports step modules and stays light
    from prefect_agentenv.run_services.agent_configuration import ConfigRequest


DEFAULT_AGENT_ID = "llm"
"""The agent deployed when a document names none (the reference tool-using LLM agent)."""


class DeployAgentStep(StepModel):
    """Deploys an agent, gives it every env in env_ids, and names it for the rest of the run."""

    type: Literal["deploy_agent"] = "deploy_agent"
    a2a_agent_id: str | None = Field(default=None, min_length=1)
    """Registry id of the agent (an A2AAgent block or a reference agent); the reference LLM agent when omitted."""
    agent_name: Annotated[str, Provides("agent")] = Field(default=DEFAULT_AGENT_NAME, min_length=1)
    """Name later steps use for this agent (AgentEnv's default-agent when omitted)."""
    env_ids: list[EnvRef] = Field(default_factory=list)
    """Deployed envs whose MCP endpoints are given to the agent."""
    system_prompt: str | None = None
    """System prompt given to the agent through its agent-config extension; the agent's own when omitted."""
    model: str | None = None
    """Model the agent should use; the run's default agent model when omitted."""
    skills: list[Skill] = Field(default_factory=list)
    """Skills registered with the agent through its skill-config extension."""
    agent_config: JsonObject = Field(default_factory=dict)
    """Extra agent-config fields, filtered to what the agent's card supports (the rest is reported)."""
    startup_timeout_seconds: float | None = Field(default=None, gt=0)
    """How long the agent may take to answer its card; the agent's registered value when omitted."""
    env_vars: dict[str, str] = Field(default_factory=dict)
    """Environment variables of the agent's process."""
    network: Widening | None = None
    """Widens the network of the agent when it runs confined, for this task only (docs/security.md, "Widening
    it"): {allow: [host:port, ...]} adds those endpoints on this machine's loopback, reachable at any path, to
    its model and its envs' MCP paths; public gives it the host's whole network. Added to its block's own
    widening (public if either is); recorded in its confinement and the result's setup as the block's is."""

    confinement: Literal["confined", "none"] | None = None
    """none runs the agent as a plain local process for this task, unconfined (docs/security.md, "Opting
    out"): it works, and every result, summary and comparison of its scores is labelled unconfined."""

    @field_validator("network", mode="before")
    @classmethod
    def _network_form(cls, value: Any) -> Any:
        return checked_widening(value)

    accepted_but_ignored = (
        "env_step_id", "agent_description", "litellm_base_url", "priority",
        "sandbox_name", "metadata", "snapshot_id", "restore_snapshot_id",
        "snapshot_config", "changelog", "role", "seed", "enable_agent_changelog",
        "agent_changelog_toolcall_position_exclusive", "agent_changelog_object_url",
        "agent_snapshot_files_artifact_id", "agent_snapshot_files_artifact_version", "agent_snapshot_target_context_id",
    )
    hosted_only = ("sandbox_type", "ttl_seconds", "cpu", "memory_mb", "disk_size_gb", "min_disk_size_gb",
                   "network_policy", "enable_docker")
    reference_aliases = {"a2a_agent_version": "version"}

    @classmethod
    def reference_forms(cls, data: JsonObject, notices: list[str]) -> JsonObject:
        """AgentEnv writes ``null`` for "the default" (agent name, agent id, lists)."""
        for name in ("agent_name", "a2a_agent_id", "env_ids", "skills", "env_vars", "system_prompt"):
            if name in data and data[name] is None:
                del data[name]
        if "a2a_agent_id" not in data:
            notices.append(f"no a2a_agent_id: the reference agent '{DEFAULT_AGENT_ID}' is deployed "
                           "(--override a2a_agent_id=... picks another)")
        return data


async def run(step: DeployAgentStep, ctx: RunContext) -> RunContext:
    """Read the envs, start the agent in a sandbox, connect it, configure it, record it."""
    from prefect_agentenv.run_services.agent_configuration import deliver, record, takes_config

    if step.agent_name in ctx.deployed_agents:
        raise StepError(f"Agent with name '{step.agent_name}' is already deployed", step=step)
    envs = [deployed_env(ctx, env_id, step) for env_id in step.env_ids]
    run_ = current_run()
    model = step.model or run_.overrides.model or ctx.metadata.default_agent_model
    agent, _ = await start_agent(step, agent_name=step.agent_name,
                                 a2a_agent_id=effective_agent_id(run_, step.agent_name,
                                                                 step.a2a_agent_id or DEFAULT_AGENT_ID),
                                 model=model, version=step.version, extra_env=step.env_vars or None,
                                 mcp_servers={env.env_id: env.mcp_url for env in envs})
    client = a2a_client(run_, agent)
    rows = await deliver(step, agent, client, _config_request(run_, step, envs, agent))
    # The card was read to configure the agent: its version says which agent a result came from.
    agent = agent.model_copy(update={"version": (await client.card()).version})
    if not await takes_config(client, "model"):
        # Nobody told this agent which model to use: the report must not name one for it.
        agent = agent.model_copy(update={"model": None})
    ctx.deployed_agents[step.agent_name] = agent
    record(ctx, rows)
    if step.model is None and agent.model is not None and ctx.metadata.default_agent_model is None:
        # Only the endpoint's default is shared: parallel agents with their own model must not clash.
        ctx.metadata.default_agent_model = agent.model
    return ctx


def _config_request(run_: RunResources, step: DeployAgentStep, envs: list[DeployedEnv],
                    agent: DeployedAgent) -> ConfigRequest:
    """What the document asks to give the agent; the run's default model only if the card can take it."""
    from prefect_agentenv.run_services.agent_configuration import ConfigRequest

    explicit: dict[str, tuple[str, JsonValue]] = {"system_prompt": ("system_prompt", step.system_prompt)}
    if step.model is not None or run_.overrides.model:
        explicit["model"] = ("model", agent.model)
    extra_config = {**step.agent_config, **_config_override(run_, step)}
    explicit.update({k: (f"agent_config.{k}", v) for k, v in extra_config.items()})
    return ConfigRequest(envs=envs, skills=list(step.skills), explicit=explicit,
                         implicit={"model": agent.model})


def _config_override(run_: RunResources, step: DeployAgentStep) -> JsonObject:
    """``--override <agent_name>.agent_config='{...}'`` (or ``agent_config`` for every agent) merges
    a JSON object into the agent's config, e.g. a scripted agent's plan."""
    raw = run_.overrides.config_for(step.agent_name)
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise StepError(f"the agent_config override is not JSON: {exc}", step=step) from None
    if not isinstance(value, dict):
        raise StepError("the agent_config override must be a JSON object", step=step)
    return value


definition = StepDefinition(DeployAgentStep, run)
