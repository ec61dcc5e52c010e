"""The gateway's upstreams for the tests: the mock model (a process of its own, as the wire tests start it)
and small loopback recorders; every gateway and recorder is stopped by its own ``async with``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from prefect_agentenv.gateway import ModelGateway, serve_gateway
from servers import Server, mock_model

from .gateway_upstreams import RUN, mock_config


@pytest.fixture(scope="session")
def mock_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with mock_model(tmp_path_factory.mktemp("gateway-mock") / "mock.log") as server:
        yield server


@pytest.fixture
async def gateway(mock_server: Server) -> AsyncIterator[ModelGateway]:
    async with httpx.AsyncClient(base_url=mock_server.base_url) as control:
        (await control.post("/mock/reset")).raise_for_status()
    async with serve_gateway(mock_config(mock_server)) as running:
        yield running


@pytest.fixture
def token(gateway: ModelGateway) -> str:
    return gateway.issue(RUN, "agent")
