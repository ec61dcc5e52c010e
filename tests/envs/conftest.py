"""The reference envs as real processes on loopback, started together, stopped by their handles."""

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

from prefect_agentenv.protocols.env import EnvClient
from prefect_agentenv.protocols.mcp import mcp_http_client

CARD = "/.well-known/agent-env.json"


@dataclass
class EnvProcess:
    """An env started for the tests; ``stop`` ends exactly this process."""

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


def _spawn(module: str, *flags: str, log: Path) -> EnvProcess:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", module, "--host", "127.0.0.1", "--port", str(port), *flags],
            stdout=out, stderr=subprocess.STDOUT)
    return EnvProcess(f"http://127.0.0.1:{port}", process, log)


class _ExitedEarly(RuntimeError):
    pass


def _wait_for_card(env: EnvProcess, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if env.process.poll() is not None:
            raise _ExitedEarly(f"env exited early:\n{env.log.read_text()}")
        try:
            if httpx.get(env.base_url + CARD, timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise TimeoutError(f"{env.base_url} card not ready after {timeout}s:\n{env.log.read_text()}")


def _ready(env: EnvProcess, module: str, *flags: str, attempts: int = 3) -> EnvProcess:
    """Wait for ``env``; if it died (another process can take the free port between our
    probe and its bind), start it again on a new port."""
    for attempt in range(attempts):
        try:
            _wait_for_card(env)
            return env
        except _ExitedEarly:
            if attempt == attempts - 1:
                raise
            env = _spawn(module, *flags, log=env.log)
    raise AssertionError("unreachable")


@pytest.fixture(scope="session")
def env_processes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, EnvProcess]]:
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
    envs = {name: _spawn(module, *flags, log=logs / f"{name}.log") for name, (module, *flags) in specs.items()}
    try:
        for name, (module, *flags) in specs.items():
            envs[name] = _ready(envs[name], module, *flags)
        yield envs
    finally:
        for env in envs.values():
            env.stop()


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
async def email(env_processes: dict[str, EnvProcess], http: httpx.AsyncClient) -> EnvClient:
    """The email env, reset: empty mailbox, no triggers, clock at real time."""
    env = EnvClient(env_processes["email"].base_url, http)
    await env.data_reset()
    return env


@pytest.fixture
async def records(env_processes: dict[str, EnvProcess], http: httpx.AsyncClient) -> EnvClient:
    """The records env, reset."""
    env = EnvClient(env_processes["records"].base_url, http)
    await env.data_reset()
    return env
