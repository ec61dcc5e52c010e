"""A Harbor task's environment as an MCP server, so an A2A agent acts inside it.

An A2A agent runs its tools where it runs. It can act inside a Harbor task's container only through a
tool that reaches there. This server offers one, ``bash``: each call runs ``bash -c COMMAND`` in the
container (a ``docker exec``), in the workdir, as ``[agent].user``, within the agent's time limit, and
returns what the command printed. The agent is given the server as it is given an env (the AgentEnv
MCP-config extension) and reaches it through one more door of its confinement; its model still goes
only through the run's gateway. Nothing else changes in the container: the agent's own files stay in its
sandbox, so what it leaves in the environment is what its commands did there.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from mcp.server.mcpserver import MCPServer
from starlette.types import ASGIApp

SERVER_NAME = "environment"
"""The name the agent is given the server under (its tools are ``bash`` on any agent that does not
prefix them)."""
MCP_PATH = "/mcp"
TURN_OVER = "the agent's turn is over: nothing more runs in the environment until its next turn"
"""What a door into the environment answers outside the agent's turn (while its work is graded)."""


@dataclass(frozen=True)
class CommandOutcome:
    """What one command did in the environment."""

    exit_code: int
    output: str
    """Its stdout and then its stderr."""
    timed_out: bool = False


RunCommand = Callable[[str], Awaitable[CommandOutcome]]
"""Runs one ``bash -c`` command in the task's container."""


def environment_mcp_app(run_command: RunCommand, *, task_name: str, workdir: str, host: str) -> ASGIApp:
    """The streamable-HTTP MCP app whose ``bash`` tool runs commands through ``run_command``.

    Served with its lifespan on (it runs the MCP session manager); ``host`` turns on the SDK's Host-header
    check for a loopback address.
    """
    server: MCPServer = MCPServer(
        SERVER_NAME, version="1", log_level="WARNING",
        instructions=f"The environment of the task '{task_name}': a Linux container whose working folder is "
                     f"{workdir}. Every command runs there.")

    @server.tool(name="bash", description=(
        f"Run a bash command in the task's environment (working folder {workdir}) and return what it printed, "
        "with its exit code when that is not 0. Each call is a new shell: `cd` does not carry over."))
    async def bash(command: str) -> str:
        return shown(await run_command(command))

    return server.streamable_http_app(streamable_http_path=MCP_PATH, host=host)


def shown(outcome: CommandOutcome) -> str:
    """The command's output as the agent reads it: what it printed, then how it ended when not cleanly."""
    text = outcome.output
    if outcome.timed_out:
        return f"{text}\n[the command was stopped at the agent's time limit]".lstrip("\n")
    if outcome.exit_code != 0:
        return f"{text}\n[exit code {outcome.exit_code}]".lstrip("\n")
    return text
