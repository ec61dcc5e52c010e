"""peer_agents: give deployed agents the agents they may delegate to (peer-agents extension)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from prefect_agentenv.attribute_docs import attribute_docstrings
from prefect_agentenv.context import AgentPeering, RunContext
from prefect_agentenv.exceptions import ProtocolError, StepError
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.run_services.agents import a2a_client, deployed_agent, network_for_peers
from prefect_agentenv.runtime.resources.run import current_run
from prefect_agentenv.steps.base import AgentRef, StepModel
from prefect_agentenv.steps.registry import StepDefinition

if TYPE_CHECKING:  # the runtime loads on use: `validate` imports step modules and stays light
    from prefect_agentenv.protocols.a2a import A2AClient


class Peering(BaseModel):
    """One agent's routing table."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=attribute_docstrings)

    source_agent_name: AgentRef
    """The agent that may delegate."""
    peer_agent_names: list[AgentRef] = Field(min_length=1)
    """The deployed agents it may delegate to."""


class PeerAgentsStep(StepModel):
    """Pushes each source agent's peers (name, URL, card) through its peer-agents extension."""

    type: Literal["peer_agents"] = "peer_agents"
    peerings: list[Peering] = Field(min_length=1)
    """One entry per source agent."""

    @model_validator(mode="after")
    def _sane_tables(self) -> PeerAgentsStep:
        sources = [p.source_agent_name for p in self.peerings]
        if len(set(sources)) != len(sources):
            raise ValueError("each source_agent_name may be listed once")
        for p in self.peerings:
            if p.source_agent_name in p.peer_agent_names:
                raise ValueError(f"agent '{p.source_agent_name}' lists itself as a peer")
        return self


async def run(step: PeerAgentsStep, ctx: RunContext) -> RunContext:
    """For each source: read its peers' cards, set its table; record what was set in metadata.agent_peerings."""
    from prefect_agentenv.protocols.agentenv_ext import AgentEnvExtensions

    run_ = current_run()
    for peering in step.peerings:
        source = deployed_agent(ctx, peering.source_agent_name, step)
        peers = []
        for name in peering.peer_agent_names:
            peer = deployed_agent(ctx, name, step)
            card = await _card(a2a_client(run_, peer))
            peers.append({"name": name, "url": peer.a2a_url, "card": card, "description": card.get("description")})
        try:
            # A confined source reaches its peers' A2A endpoints, and nothing else of theirs.
            await network_for_peers(source, [deployed_agent(ctx, name, step) for name in peering.peer_agent_names])
            ext = await AgentEnvExtensions.of(a2a_client(run_, source))
            await ext.set_peer_agents(peers)
        except ProtocolError as exc:
            raise StepError(f"giving agent '{source.agent_name}' its peers: {exc}", step=step) from exc
        ctx.metadata.agent_peerings.append(
            AgentPeering(source_agent_name=source.agent_name, peer_agent_names=list(peering.peer_agent_names)))
    return ctx


async def _card(client: A2AClient) -> JsonObject:
    """The peer's card as it serves it, or ``{}`` (a person's endpoint may serve none; a peer needs only a URL)."""
    try:
        card = await client.card()
    except ProtocolError:
        return {}
    return dict(card.raw)


definition = StepDefinition(PeerAgentsStep, run)
