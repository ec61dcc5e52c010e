"""An agent built with the AgentEnv agent SDK that delegates through the SDK's own peer-agents tools.

Run with the peers' interpreter: ``.venv-peers/bin/python tests/peers/sdk_delegating_agent.py``
(the SDK reads ``A2A_HOST`` and ``A2A_PORT``). It declares ``urn:agentenv:triggers/v1`` (the SDK's own
trigger engine) and ``urn:agentenv:peer-agents/v1``; once a
task sets its peers, the SDK gives it a ``peer_agents`` MCP server whose ``peer_send_message`` tool
sends A2A messages. A prompt ``NAME: message`` is sent to the peer NAME that way and answered
``NAME answered: <what the tool returned>``. No hosted model is involved.
"""

from __future__ import annotations

from typing import Any

from agentenv_protocol.a2a_agent import (
    PEER_AGENTS_V1,
    TRIGGERS_V1,
    AgentEnvAgent,
    AgentIdentity,
    TaskRequest,
    TaskResult,
    TextPart,
    Usage,
    a2a_agent,
)
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client


@a2a_agent(identity=AgentIdentity(name="sdk-delegator", description="Passes a prompt on to a peer.", version="1.0.0"),
           extensions=[PEER_AGENTS_V1, TRIGGERS_V1])
class Delegator(AgentEnvAgent):
    async def run(self, request: TaskRequest[Any]) -> TaskResult:
        prompt = " ".join(p.text for p in request.parts if isinstance(p, TextPart)).strip()
        server = request.mcp_servers.get("peer_agents")
        if server is None:
            return TaskResult.text("I have no peers.")
        name, _, message = prompt.partition(":")
        async with streamablehttp_client(server["url"], headers=server.get("headers")) as (read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                result = await session.call_tool("peer_send_message", {"name": name.strip(), "prompt": message.strip()})
        text = " ".join(getattr(c, "text", "") for c in result.content)
        return TaskResult.text(f"{name.strip()} answered: {text}", usage=Usage(tool_call_count=1))


if __name__ == "__main__":
    Delegator().serve(log_level="warning")
