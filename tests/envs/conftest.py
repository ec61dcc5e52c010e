"""The reference envs as real processes on loopback, started together, stopped by their handles."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import httpx2
import pytest

from prefect_agentenv.protocols.env import EnvClient
from prefect_agentenv.protocols.mcp import mcp_http_client
from servers import ENV_CARD, Server, python_server, running


@pytest.fixture(scope="session")
def env_processes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Server]]:
    """Every env the tests need, started in parallel (each takes ~1 s to import its stack).

    ``disposable`` is for the one test that stops its env on purpose.
    """
    logs = tmp_path_factory.mktemp("envs")
    specs = {
        "email": ("prefect_agentenv.envs.email",),
        "records": ("prefect_agentenv.envs.records",),
        "records_mcp_only": ("prefect_agentenv.envs.records", "--no-data-plane"),
        "disposable": ("prefect_agentenv.envs.email",),
    }
    with running({name: Server(python_server("-m", module, *flags), ready=ENV_CARD, log=logs / f"{name}.log",
                               name=f"the {name} env")
                  for name, (module, *flags) in specs.items()}) as envs:
        yield envs


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=5.0) as client:
        yield client


@pytest.fixture(scope="session")
async def mcp_http() -> AsyncIterator[httpx2.AsyncClient]:
    """One httpx2 client shared by every MCP session, as a run shares one."""
    async with mcp_http_client(timeout=5.0) as client:
        yield client


@pytest.fixture
async def email(env_processes: dict[str, Server], http: httpx.AsyncClient) -> EnvClient:
    """The email env, reset: empty mailbox, no triggers, clock at real time."""
    env = EnvClient(env_processes["email"].base_url, http)
    await env.data_reset()
    return env


@pytest.fixture
async def records(env_processes: dict[str, Server], http: httpx.AsyncClient) -> EnvClient:
    """The records env, reset."""
    env = EnvClient(env_processes["records"].base_url, http)
    await env.data_reset()
    return env
