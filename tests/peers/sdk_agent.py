"""An agent built with the AgentEnv agent SDK (``agentenv-framework-protocol``'s ``AgentEnvAgent``).

Run with the peers' interpreter: ``.venv-peers/bin/python tests/peers/sdk_agent.py`` (the SDK reads
``A2A_HOST`` and ``A2A_PORT``). Its card, A2A server (0.3), mcp-config, agent-config (derived by the
SDK from ``ToolCallerConfig``: ``temperature`` and the SDK's own fields, no ``system_prompt`` or
``model``), trajectory and staging extensions are the SDK's own. It needs no hosted model: a prompt
``TOOL {json arguments}`` makes it call that tool on the first MCP server it was given (with the
``mcp`` 1.x client) and reply ``TOOL -> <result> (temperature T)``; any other prompt is answered
with the names of the tools it can see.
"""

from __future__ import annotations

import json
from typing import Any

from agentenv_protocol.a2a_agent import (
    MCP_CONFIG_V1,
    TRAJECTORY_V1,
    AgentConfig,
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


class ToolCallerConfig(AgentConfig):
    temperature: float = 0.0


@a2a_agent(identity=AgentIdentity(name="sdk-tool-caller", description="Calls one env tool per prompt.",
                                  version="1.0.0"),
           extensions=[MCP_CONFIG_V1, TRAJECTORY_V1], config=ToolCallerConfig)
class ToolCaller(AgentEnvAgent):
    async def run(self, request: TaskRequest[ToolCallerConfig]) -> TaskResult:
        prompt = " ".join(p.text for p in request.parts if isinstance(p, TextPart)).strip()
        servers = list(request.mcp_servers.values())
        if not servers:
            return TaskResult.text("I was given no MCP server.")
        tool, _, raw = prompt.partition(" ")
        async with streamablehttp_client(servers[0]["url"], headers=servers[0].get("headers")) as (read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                names = [t.name for t in (await session.list_tools()).tools]
                if tool not in names:
                    return TaskResult.text(f"tools: {', '.join(sorted(names))}")
                result = await session.call_tool(tool, json.loads(raw or "{}"))
        text = " ".join(getattr(c, "text", "") for c in result.content)
        request.trajectory.set_format("tool-calls")
        request.trajectory.append({"kind": "tool_call", "tool": tool, "result": text})
        return TaskResult.text(f"{tool} -> {text} (temperature {request.config.temperature})",
                               usage=Usage(tool_call_count=1))


if __name__ == "__main__":
    ToolCaller().serve(log_level="warning")
