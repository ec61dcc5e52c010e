"""What the gateway tests share: the provider key that must reach only the upstream, the run, and
the gateway's configuration with every wire going to the mock model."""

from __future__ import annotations

from pydantic import SecretStr

from prefect_agentenv.gateway import GatewayConfig, Upstream
from prefect_agentenv.usage import ModelPrice
from servers import Server

CANARY_KEY = "sk-canary-0f1e2d3c4b5a69788796a5b4c3d2e1f0"
"""The 'real' provider key: it must reach the upstream and nothing else."""
RUN = "run-1"


def mock_config(mock: Server) -> GatewayConfig:
    """Every wire to the mock model: OpenAI's wires with a bearer key, Messages with Anthropic's ``x-api-key``."""
    key = SecretStr(CANARY_KEY)
    return GatewayConfig(
        chat=Upstream(base_url=mock.url("/v1"), api_key=key),
        responses=Upstream(base_url=mock.url("/v1"), api_key=key),
        messages=Upstream(base_url=mock.url("/v1"), auth="x-api-key", api_key=key),
        prices={"mock": ModelPrice(input_per_million=1.0, output_per_million=2.0)})
