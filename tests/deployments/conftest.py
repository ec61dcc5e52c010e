"""A real `prefect server start` per test module (each module deploys the same deployment names)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from servers import LOOPBACK, PORT, Server

from .deployment_helpers import BIN


@pytest.fixture(scope="module")
def server_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A real Prefect server on loopback, with its own home and database."""
    home = tmp_path_factory.mktemp("prefect-home")
    env = {"PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
           "PREFECT_UI_ENABLED": "false", "PREFECT_API_URL": f"http://{LOOPBACK}:{PORT}/api",
           "PREFECT_AGENTENV_HOME": str(tmp_path_factory.mktemp("agentenv-home")),
           "PREFECT_RUNNER_POLL_FREQUENCY": "1", "PREFECT_LOGGING_LEVEL": "WARNING"}
    with Server([str(BIN / "prefect"), "server", "start", "--host", LOOPBACK, "--port", PORT], ready="/api/health",
                log=home / "server.log", env=env, name="prefect server", timeout=180, stop_timeout=20) as server:
        yield server.environ
