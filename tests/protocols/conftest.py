"""Real servers on loopback for the protocol clients: the email env and a hand-written
mcp 1.x-style server. Each is a child process, stopped by its handle."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import httpx2
import pytest

from prefect_agentenv.protocols.mcp import mcp_http_client
from servers import ENV_CARD, Server, python_server, running

LEGACY_MCP_SERVER = str(Path(__file__).with_name("legacy_mcp_server.py"))


@pytest.fixture(scope="session")
def protocol_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Server]]:
    """Started together (each takes ~1 s to import its stack), stopped together."""
    logs = tmp_path_factory.mktemp("protocol-servers")
    with running({
        "email": Server(python_server("-m", "prefect_agentenv.envs.email"), ready=ENV_CARD, log=logs / "email.log",
                        name="the email env"),
        "legacy": Server(python_server(LEGACY_MCP_SERVER), ready="/_log", log=logs / "legacy.log",
                         name="the legacy MCP server"),
    }) as servers:
        yield servers


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=5.0) as client:
        yield client


@pytest.fixture(scope="session")
async def mcp_http() -> AsyncIterator[httpx2.AsyncClient]:
    """One httpx2 client shared by every MCP session, as a run shares one."""
    async with mcp_http_client(timeout=5.0) as client:
        yield client
