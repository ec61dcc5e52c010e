"""The gateway's upstreams for the tests: the mock model (a process of its own, as the wire tests start it)
and small loopback recorders; every gateway and recorder is stopped by its own ``async with``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from pydantic import SecretStr
from servers import Server, mock_model

from prefect_agentenv.gateway import GatewayConfig, ModelGateway, Upstream, serve_gateway
from prefect_agentenv.usage import ModelPrice

CANARY_KEY = "sk-canary-0f1e2d3c4b5a69788796a5b4c3d2e1f0"
"""The 'real' provider key: it must reach the upstream and nothing else."""
RUN = "run-1"


@pytest.fixture(scope="session")
def mock_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with mock_model(tmp_path_factory.mktemp("gateway-mock") / "mock.log") as server:
        yield server


def mock_config(mock: Server) -> GatewayConfig:
    """Every wire to the mock model: OpenAI's wires with a bearer key, Messages with Anthropic's ``x-api-key``."""
    key = SecretStr(CANARY_KEY)
    return GatewayConfig(
        chat=Upstream(base_url=mock.url("/v1"), api_key=key),
        responses=Upstream(base_url=mock.url("/v1"), api_key=key),
        messages=Upstream(base_url=mock.url("/v1"), auth="x-api-key", api_key=key),
        prices={"mock": ModelPrice(input_per_million=1.0, output_per_million=2.0)})


@pytest.fixture
async def gateway(mock_server: Server) -> AsyncIterator[ModelGateway]:
    async with httpx.AsyncClient(base_url=mock_server.base_url) as control:
        (await control.post("/mock/reset")).raise_for_status()
    async with serve_gateway(mock_config(mock_server)) as running:
        yield running


@pytest.fixture
def token(gateway: ModelGateway) -> str:
    return gateway.issue(RUN, "agent")
