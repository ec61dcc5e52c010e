"""Real servers on loopback for the tests: started from an argv, awaited, stopped by their handles.

``tests/`` is on ``sys.path`` (its ``conftest.py`` puts it there), so any test module can
``from servers import Server, python_server, running``::

    @pytest.fixture(scope="module")
    def email(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
        log = tmp_path_factory.mktemp("email") / "email.log"
        with Server(python_server("-m", "prefect_agentenv.envs.email"), ready=ENV_CARD, log=log) as server:
            yield server

Several servers are started with :func:`running`, which spawns them all before waiting for any
(each spends a second or more importing its stack).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Self, TypeVar

import httpx

from prefect_agentenv.runtime.launch import ports

LOOPBACK = "127.0.0.1"
PORT = "{port}"
"""Stands for the server's port in an argv or an extra environment value."""
AGENT_CARD = "/.well-known/agent-card.json"
ENV_CARD = "/.well-known/agent-env.json"

_PORT_TAKEN = ("address already in use", "only one usage of each socket address")
_LOG_TAIL_CHARS = 4000


class ServerExitedEarly(RuntimeError):
    """The server process ended before its readiness path answered."""


def free_port() -> int:
    """A port nothing listens on once this returns (until someone binds it), never one handed to
    another test's server or to a launch of the package in the last two minutes (the package's own
    picker: the kernel can hand a just-closed port out again)."""
    return ports.free_port(LOOPBACK)


def python_server(*args: str) -> list[str]:
    """The argv of ``python *args --host 127.0.0.1 --port {port}`` with this interpreter."""
    return [sys.executable, *args, "--host", LOOPBACK, "--port", PORT]


def stop_process(process: subprocess.Popen[bytes], timeout: float = 5.0) -> int:
    """Stop exactly this process: SIGTERM, wait ``timeout`` seconds, then SIGKILL; its exit code."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
    return process.wait()


@dataclass(eq=False)
class Server:
    """A server process for the tests, on a free loopback port; ``stop`` ends exactly this process.

    Attributes:
        argv: The command; every ``{port}`` in it becomes the chosen port.
        ready: The path that answers 200 once the server is ready (``/health``, a card path).
        log: The file that receives the server's stdout and stderr.
        env: Extra environment on top of ``os.environ`` as it is at spawn time; ``{port}`` is
            replaced in its values too.
        cwd: The working folder of the process.
        name: What error messages call the server.
        timeout: Seconds to wait for ``ready``.
        stop_timeout: Seconds ``stop`` gives the process between SIGTERM and SIGKILL.
        environ: The whole environment the process was started with.
    """

    argv: Sequence[str]
    ready: str
    log: Path
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    name: str = "server"
    timeout: float = 30.0
    stop_timeout: float = 5.0
    port: int = field(init=False, default=0)
    environ: dict[str, str] = field(init=False, repr=False, default_factory=dict)
    process: subprocess.Popen[bytes] = field(init=False, repr=False)

    @property
    def base_url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def url(self, path: str = "") -> str:
        return self.base_url + path

    def spawn(self) -> Self:
        """Start the process on a free port, without waiting for it."""
        self.port = free_port()
        argv = [arg.replace(PORT, str(self.port)) for arg in self.argv]
        extra = {key: value.replace(PORT, str(self.port)) for key, value in self.env.items()}
        self.environ = {**os.environ, **extra}
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(argv, cwd=self.cwd, env=self.environ, stdout=out,
                                            stderr=subprocess.STDOUT)
        return self

    def wait_ready(self) -> None:
        """Wait until ``ready`` answers 200.

        The free port is only probed, not held, so another process can bind it before the server
        does; a server that exits saying so is started once more on a new port.

        Raises:
            ServerExitedEarly: The process ended first (its log tail is in the message).
            TimeoutError: ``ready`` did not answer within ``timeout`` seconds.
        """
        try:
            self._poll_ready()
        except ServerExitedEarly:
            if not any(sign in self.log_tail().lower() for sign in _PORT_TAKEN):
                raise
            self.spawn()._poll_ready()

    def _poll_ready(self) -> None:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ServerExitedEarly(f"{self.name} exited early with code {self.process.returncode}; "
                                        f"the end of {self.log}:\n{self.log_tail()}")
            try:
                if httpx.get(self.url(self.ready), timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise TimeoutError(f"{self.name}: {self.url(self.ready)} not ready after {self.timeout}s; "
                           f"the end of {self.log}:\n{self.log_tail()}")

    def log_tail(self) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return text[-_LOG_TAIL_CHARS:]

    def stop(self) -> int:
        """Stop the process (SIGTERM, then SIGKILL after ``stop_timeout`` seconds); its exit code."""
        return stop_process(self.process, self.stop_timeout)

    def __enter__(self) -> Self:
        self.spawn()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def mock_model(log: Path) -> Server:
    """The built-in mock model: an OpenAI-compatible server whose replies the tests script."""
    return Server(python_server("-m", "prefect_agentenv.agents.mock_model"), ready="/health", log=log,
                  name="the mock model")


S = TypeVar("S", bound=Server)


@contextmanager
def running(servers: Mapping[str, S]) -> Iterator[dict[str, S]]:
    """Spawn every server at once, wait for all, stop every one that started on exit."""
    started: dict[str, S] = {}
    try:
        for name, server in servers.items():
            started[name] = server.spawn()
        for server in started.values():
            server.wait_ready()
        yield started
    finally:
        for server in started.values():
            server.stop()
