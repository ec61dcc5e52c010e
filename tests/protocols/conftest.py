"""Real servers on loopback for the protocol clients: the email env and a hand-written
mcp 1.x-style server. Each is a child process, stopped by its handle."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import httpx2
import pytest

from prefect_agentenv.protocols.mcp import mcp_http_client

CARD = "/.well-known/agent-env.json"


@dataclass
class ServerProcess:
    """A server started for the tests; ``stop`` ends exactly this process."""

    base_url: str
    process: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _spawn(argv: list[str], log: Path) -> ServerProcess:
    port = _free_port()
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, *argv, "--host", "127.0.0.1", "--port", str(port)],
                                   stdout=out, stderr=subprocess.STDOUT)
    return ServerProcess(f"http://127.0.0.1:{port}", process, log)


class _ExitedEarly(RuntimeError):
    pass


def _wait_ready(server: ServerProcess, path: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise _ExitedEarly(f"server exited early:\n{server.log.read_text()}")
        try:
            if httpx.get(server.base_url + path, timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise TimeoutError(f"{server.base_url}{path} not ready after {timeout}s:\n{server.log.read_text()}")


def _ready(server: ServerProcess, argv: list[str], path: str, attempts: int = 3) -> ServerProcess:
    """Wait for ``server``; if it died (another process can take the free port between our
    probe and its bind), start it again on a new port."""
    for attempt in range(attempts):
        try:
            _wait_ready(server, path)
            return server
        except _ExitedEarly:
            if attempt == attempts - 1:
                raise
            server = _spawn(argv, server.log)
    raise AssertionError("unreachable")


@pytest.fixture(scope="session")
def protocol_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, ServerProcess]]:
    """Started together (each takes ~1 s to import its stack), stopped together."""
    logs = tmp_path_factory.mktemp("protocol-servers")
    legacy = str(Path(__file__).with_name("legacy_mcp_server.py"))
    specs = {
        "email": (["-m", "prefect_agentenv.envs.email"], CARD),
        "legacy": ([legacy], "/_log"),
    }
    servers = {name: _spawn(argv, logs / f"{name}.log") for name, (argv, _) in specs.items()}
    try:
        for name, (argv, ready) in specs.items():
            servers[name] = _ready(servers[name], argv, ready)
        yield servers
    finally:
        for server in servers.values():
            server.stop()


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=5.0) as client:
        yield client


@pytest.fixture(scope="session")
async def mcp_http() -> AsyncIterator[httpx2.AsyncClient]:
    """One httpx2 client shared by every MCP session, as a run shares one."""
    async with mcp_http_client(timeout=5.0) as client:
        yield client
