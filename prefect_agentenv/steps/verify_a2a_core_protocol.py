"""verify_a2a_core_protocol: probe a deployed agent's card, A2A endpoint and declared extensions."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from prefect_agentenv.context import DeployedAgent, RunContext
from prefect_agentenv.exceptions import NotInContextError
from prefect_agentenv.run_services.clients import http_client, peer_read_timeout
from prefect_agentenv.runtime.resources.run import current_run
from prefect_agentenv.steps.base import AgentRef, Provides, VerifierStep
from prefect_agentenv.steps.registry import StepDefinition
from prefect_agentenv.steps.verify_env_card import probe_verification


class VerifyA2ACoreProtocolStep(VerifierStep):
    """Sends one probe message (message/send, then tasks/get until it ends) and probes each extension;
    a probe that fails (not one that is missing) scores 0."""

    type: Literal["verify_a2a_core_protocol"] = "verify_a2a_core_protocol"
    agent_name: AgentRef | None = None
    """The deployed agent to probe."""
    a2a_agent_id: str | None = None
    """The AgentEnv way to name it: the registry id a deploy_agent step deployed (when agent_name is omitted)."""
    prompt: str = "Reply with one word: ready."
    """The probe message."""
    timeout_seconds: float = Field(default=120, gt=0)
    """Bound on the probe message's task."""
    verifier_id: Annotated[str, Provides("verifier")] = Field(default="", validate_default=False)
    """Key of the results in metadata.verifications; the step id when omitted."""

    accepted_but_ignored = ("prompt_id",)

    @model_validator(mode="after")
    def _names_one_agent(self) -> VerifyA2ACoreProtocolStep:
        if (self.agent_name is None) == (self.a2a_agent_id is None):
            raise ValueError("give agent_name (or, the AgentEnv way, a2a_agent_id), exactly one")
        if not self.verifier_id:
            self.verifier_id = self.id
        return self


async def run(step: VerifyA2ACoreProtocolStep, ctx: RunContext) -> RunContext:
    """Probe the agent and record one row per probe (rows that only inform weigh 0)."""
    from prefect_agentenv.protocols.probes import probe_agent

    agent = _agent(step, ctx)
    report = await probe_agent(agent.a2a_url, http=http_client(current_run()), prompt=step.prompt,
                               timeout_seconds=step.timeout_seconds, request_timeout=peer_read_timeout())
    ctx.metadata.verifications[step.verifier_id] = probe_verification(report, step)
    return ctx


def _agent(step: VerifyA2ACoreProtocolStep, ctx: RunContext) -> DeployedAgent:
    found = [a for a in ctx.deployed_agents.values()
             if a.agent_name == step.agent_name or (step.agent_name is None and a.a2a_agent_id == step.a2a_agent_id)]
    if not found:
        name = step.agent_name or f"deployed from '{step.a2a_agent_id}'"
        raise NotInContextError(f"Agent with name '{name}' not found in context.deployed_agents"
                                if step.agent_name else f"No agent {name} in context.deployed_agents",
                                step=step)
    return found[0]


definition = StepDefinition(VerifyA2ACoreProtocolStep, run)
