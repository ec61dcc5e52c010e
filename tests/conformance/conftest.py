"""Genuine third-party peers, registered the way a user registers them (``env register`` /
``agent register`` with ``--command``), once per test session.

The AgentEnv SDK peers run on the peers' interpreter (``.venv-peers``, made by ``make peers``):
their SDKs pin an a2a-sdk and mcp that cannot share our venv.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from prefect_agentenv.cli import app

ROOT = Path(__file__).resolve().parents[2]
PEERS = ROOT / "tests" / "peers"
PEERS_PYTHON = ROOT / ".venv-peers" / "bin" / "python"

ENVS = {
    "notes-sdk": [f"{PEERS_PYTHON} {PEERS / 'sdk_env.py'}", "--env", "MCP_HOST={host}", "--env", "MCP_PORT={port}"],
    "calculator-mcp": [f"{PEERS_PYTHON} {PEERS / 'mcp_only_server.py'} --host {{host}} --port {{port}}"],
}
AGENTS = {
    # By their command alone: confinement finds their venv, its Python and their script's folder.
    "sdk-tool-caller": [f"{PEERS_PYTHON} {PEERS / 'sdk_agent.py'}", "--env", "A2A_HOST={host}",
                        "--env", "A2A_PORT={port}"],
    "plain-a2a": [f"{sys.executable} {PEERS / 'plain_agent.py'} --host {{host}} --port {{port}}"],
}


def cli(*args: str) -> tuple[int, str]:
    """Run the CLI in-process, as a user would from a shell; it must end by exiting, never by crashing.

    (Prefect's console log handler keeps the stream of the first in-process invocation, so a later
    one can print a "Logging error" traceback from it; that is this harness, not the command.)
    """
    result = CliRunner().invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert "Traceback" not in result.output.split("--- Logging error")[0], result.output
    # --json output is read from stdout alone (stderr may carry log lines).
    return result.exit_code, result.stdout if "--json" in args else result.output


@pytest.fixture(scope="session")
def genuine_peers(prefect_harness: None) -> Iterator[None]:
    """Every genuine peer registered by name (blocks); skipped when the peers' venv is missing."""
    if not PEERS_PYTHON.exists():
        pytest.skip("the genuine peers need their own venv: run `make peers`")
    for noun, registry in (("env", ENVS), ("agent", AGENTS)):
        for name, (command, *options) in registry.items():
            code, out = cli(noun, "register", name, "--command", command, *options, "--startup-timeout", "60",
                            "--overwrite")
            assert code == 0, out
    yield
