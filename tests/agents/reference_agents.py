"""Starting reference agents (and envs) as real processes on loopback for the agent tests.

Each agent runs in its own sandbox folder (its cwd, also ``AGENTENV_SANDBOX_ROOT``); all the
servers a module needs are started together (each spends a second or more importing its stack)
and stopped by their own handles.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

AGENT_CARD = "/.well-known/agent-card.json"
ENV_CARD = "/.well-known/agent-env.json"


@dataclass
class ServerProcess:
    """A server started for the tests; ``stop`` ends exactly this process."""

    name: str
    base_url: str
    process: subprocess.Popen[bytes]
    log: Path
    sandbox: Path
    ready_path: str

    def stop(self) -> int:
        """Stop the process (SIGTERM, then SIGKILL) and return its exit code."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
        return self.process.wait()


@dataclass(frozen=True)
class Spec:
    """What to start: a module served with ``--host``/``--port``, and the path that says it is ready."""

    module: str
    ready_path: str = AGENT_CARD


def _spawn(name: str, spec: Spec, root: Path) -> ServerProcess:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    sandbox = root / name
    sandbox.mkdir(parents=True)
    log = root / f"{name}.log"
    env = {**os.environ, "AGENTENV_SANDBOX_ROOT": str(sandbox)}
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-m", spec.module, "--host", "127.0.0.1", "--port", str(port)],
                                   cwd=sandbox, env=env, stdout=out, stderr=subprocess.STDOUT)
    return ServerProcess(name, f"http://127.0.0.1:{port}", process, log, sandbox, spec.ready_path)


def _wait_ready(server: ServerProcess, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"{server.name} exited early:\n{server.log.read_text()}")
        try:
            if httpx.get(server.base_url + server.ready_path, timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise TimeoutError(f"{server.name} not ready after {timeout}s:\n{server.log.read_text()}")


@contextmanager
def running(specs: dict[str, Spec], root: Path) -> Iterator[dict[str, ServerProcess]]:
    """Start every server in ``specs`` at once, wait for all, stop them all on exit."""
    servers: dict[str, ServerProcess] = {}
    try:
        for name, spec in specs.items():
            servers[name] = _spawn(name, spec, root)
        for server in servers.values():
            _wait_ready(server)
        yield servers
    finally:
        for server in servers.values():
            server.stop()


SCRIPTED = Spec("prefect_agentenv.agents.scripted")
USER_SIM = Spec("prefect_agentenv.agents.user_sim")
EMAIL_ENV = Spec("prefect_agentenv.envs.email", ENV_CARD)
