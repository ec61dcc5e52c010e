"""The scripted agent's backend: runs a plan against the configured MCP servers and the sandbox."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from contextlib import AsyncExitStack
from typing import Any, ClassVar

import httpx2

from prefect_agentenv.agents.scripted.plan import Plan, PlannedToolCall, choose_plan
from prefect_agentenv.agents.server import BASE_CONFIG_FIELDS, AgentBackend, AgentFailure, Turn, TurnResult
from prefect_agentenv.exceptions import McpError
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.protocols.mcp import McpClient, mcp_http_client, mcp_session

logger = logging.getLogger(__name__)

DIE_EXIT_CODE = 17
"""The exit code of a plan with ``die``, so a test can tell it from a crash."""


class ScriptedAgent(AgentBackend):
    """Does what its plan says: MCP tool calls, file writes, then a reply (or a failure)."""

    name = "scripted"
    description = "A deterministic agent: calls the MCP tools, writes the files and replies as its plan says."
    config_fields: ClassVar[tuple[str, ...]] = (*BASE_CONFIG_FIELDS, "plan")
    steerable: ClassVar[bool] = True
    """A message into a working task is read before the reply: ``{steered}`` in the reply template."""

    _http: httpx2.AsyncClient | None = None

    async def respond(self, turn: Turn) -> TurnResult:
        plan, source = choose_plan(turn.text, self.state.config, self.state.workdir, turn.number)
        turn.trajectory.record("model", model="scripted", plan_source=source,
                               plan=plan.model_dump(mode="json", exclude_defaults=True))
        runner = _PlanRun(self, turn)
        results = await runner.call_tools(plan.tool_calls)
        runner.write_files(plan)
        if plan.sleep_seconds:
            await asyncio.sleep(plan.sleep_seconds)
        if plan.die:
            logger.warning("the plan says to die: exiting with code %s", DIE_EXIT_CODE)
            print(f"scripted agent: exiting with code {DIE_EXIT_CODE} as the plan says", file=sys.stderr, flush=True)
            os._exit(DIE_EXIT_CODE)
        if plan.fail is not None:
            raise AgentFailure(plan.fail.message, error_type=plan.fail.error_type, error_code=plan.fail.error_code,
                               tool_call_count=runner.count)
        # The safe point: after the tool calls, the files and the sleep, with no await left.
        steered = turn.take_steered()
        data: JsonObject = {"steered": list(steered)} if steered else {}
        return TurnResult(_render(plan.reply, results, turn, steered), tool_call_count=runner.count, data=data)

    def mcp_http(self) -> httpx2.AsyncClient:
        """One httpx2 client for every MCP session of the process (sessions set up in ~3 ms)."""
        if self._http is None:
            self._http = mcp_http_client()
        return self._http

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()


class _PlanRun:
    """One prompt's execution: its MCP sessions, its tool-call count."""

    def __init__(self, agent: ScriptedAgent, turn: Turn) -> None:
        self.agent = agent
        self.turn = turn
        self.count = 0

    async def call_tools(self, calls: list[PlannedToolCall]) -> list[Any]:
        if not calls:
            return []
        results: list[Any] = []
        async with AsyncExitStack() as stack:
            sessions: dict[str, McpClient] = {}
            for call in calls:
                session = await self._session_for(call, sessions, stack)
                results.append(await self._call(session, call))
        return results

    async def _call(self, session: McpClient, call: PlannedToolCall) -> Any:
        self.count += 1
        self.turn.trajectory.record("tool_call", server=call.server, tool=call.tool, arguments=call.arguments)
        try:
            result = await session.call_tool(call.tool, call.arguments)
        except McpError as exc:
            raise AgentFailure(f"tool {call.tool!r} could not be called: {exc}", error_type="tool_error",
                               tool_call_count=self.count) from exc
        self.turn.trajectory.record("tool_result", tool=call.tool, is_error=result.is_error, text=result.text,
                                    data=result.structured)
        return result.data if result.data is not None else result.text

    async def _session_for(self, call: PlannedToolCall, sessions: dict[str, McpClient],
                           stack: AsyncExitStack) -> McpClient:
        servers = self.agent.state.mcp_servers
        if not servers:
            raise AgentFailure(f"the plan calls {call.tool!r} but no MCP server was configured",
                               error_type="no_mcp_server", tool_call_count=self.count)
        if call.server is not None:
            if call.server not in servers:
                raise AgentFailure(f"the plan names the MCP server {call.server!r}; configured: {sorted(servers)}",
                                   error_type="unknown_mcp_server", tool_call_count=self.count)
            return await self._open(call.server, sessions, stack)
        if len(servers) == 1:
            return await self._open(next(iter(servers)), sessions, stack)
        for name in servers:
            session = await self._open(name, sessions, stack)
            if call.tool in {tool.name for tool in await session.list_tools()}:
                return session
        raise AgentFailure(f"no configured MCP server has the tool {call.tool!r}", error_type="unknown_tool",
                           tool_call_count=self.count)

    async def _open(self, name: str, sessions: dict[str, McpClient], stack: AsyncExitStack) -> McpClient:
        if name not in sessions:
            server = self.agent.state.mcp_servers[name]
            http = self.agent.mcp_http()
            if server.headers:
                # Per-server headers (tokens) ride on their own client, never the shared one.
                http = await stack.enter_async_context(mcp_http_client(headers=server.headers))
            try:
                sessions[name] = await stack.enter_async_context(mcp_session(server.url, http=http))
            except McpError as exc:
                raise AgentFailure(f"the MCP server {name!r} could not be reached: {exc}",
                                   error_type="tool_error", tool_call_count=self.count) from exc
        return sessions[name]

    def write_files(self, plan: Plan) -> None:
        for planned in plan.files:
            self.count += 1
            self.turn.trajectory.record("tool_call", tool="write_file", builtin=True, arguments={"path": planned.path})
            try:
                target = self.agent.state.path(planned.path)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(planned.content)
            except (OSError, ValueError) as exc:
                raise AgentFailure(f"could not write {planned.path}: {exc}", error_type="file_error",
                                   tool_call_count=self.count) from exc
            self.turn.trajectory.record("tool_result", tool="write_file", is_error=False, text=str(target))


def _render(template: str, results: list[Any], turn: Turn, steered: list[str]) -> str:
    try:
        return template.format_map({"tool_results": results, "prompt": turn.text, "turn": turn.number,
                                    "steered": "\n".join(steered)})
    except (KeyError, IndexError, ValueError, AttributeError, TypeError) as exc:
        raise AgentFailure(f"the reply template {template!r} cannot be filled: {exc!r}", error_type="bad_plan",
                           tool_call_count=len(results)) from exc
