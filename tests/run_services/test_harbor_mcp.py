"""The environment's MCP server over the wire: one ``bash`` tool, what it returns, and how a command ended.

Served as a run serves it (in the event loop, its lifespan on), talked to with the project's MCP client
and with an mcp 1.x-style ``initialize`` handshake; its commands run in a real bash on this machine (the
run's own runs them in the task's container: tests/steps/test_harbor_agent.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from prefect_agentenv.protocols.mcp import mcp_session
from prefect_agentenv.run_services.harbor_mcp import MCP_PATH, CommandOutcome, environment_mcp_app
from prefect_agentenv.runtime.launch.guest_server import start_guest_server


async def host_bash(command: str) -> CommandOutcome:
    process = await asyncio.create_subprocess_exec("bash", "-c", command, stdout=asyncio.subprocess.PIPE,
                                                   stderr=asyncio.subprocess.STDOUT)
    try:
        out, _ = await asyncio.wait_for(process.communicate(), 2)
    except TimeoutError:
        process.kill()
        await process.wait()
        return CommandOutcome(124, "", timed_out=True)
    return CommandOutcome(process.returncode or 0, out.decode())


@pytest.fixture
async def server_url() -> AsyncIterator[str]:
    app = environment_mcp_app(host_bash, task_name="demo", workdir="/app", host="127.0.0.1")
    server = await start_guest_server(app, "127.0.0.1", graceful_shutdown_seconds=1, lifespan=True, name="test")
    try:
        yield f"{server.base_url}{MCP_PATH}"
    finally:
        await server.stop()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_server_offers_bash_and_says_how_each_command_ended(server_url: str, mode: str) -> None:
    async with mcp_session(server_url, mode=mode) as session:  # type: ignore[arg-type]
        tools = await session.list_tools()
        printed = await session.call_tool("bash", {"command": "echo hello; echo oops >&2"})
        failed = await session.call_tool("bash", {"command": "echo partial; exit 3"})
        stopped = await session.call_tool("bash", {"command": "sleep 30"})

    assert [t.name for t in tools] == ["bash"] and "/app" in (tools[0].description or "")
    assert tools[0].input_schema["required"] == ["command"]
    assert printed.text == "hello\noops\n" and not printed.is_error
    assert failed.text == "partial\n\n[exit code 3]"
    assert stopped.text == "[the command was stopped at the agent's time limit]"


async def test_a_request_naming_another_host_is_refused(server_url: str) -> None:
    """The SDK's Host-header check is on for a loopback server (a page's DNS rebinding cannot reach it)."""
    async with httpx.AsyncClient() as http:
        answer = await http.post(server_url, headers={"Host": "evil.example:80", "content-type": "application/json",
                                                      "accept": "application/json, text/event-stream"},
                                 json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert answer.status_code in (400, 421), answer.text
