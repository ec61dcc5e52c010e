"""Starting reference agents (and envs) as real processes on loopback for the agent tests.

Each agent runs in its own sandbox folder (its cwd, also ``AGENTENV_SANDBOX_ROOT``); all the
servers a module needs are started together (each spends a second or more importing its stack)
and stopped by their own handles.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from servers import AGENT_CARD, ENV_CARD, Server, python_server
from servers import running as running_servers


class ServerProcess(Server):
    """A reference agent or env, serving from its own sandbox folder."""

    @property
    def sandbox(self) -> Path:
        assert self.cwd is not None
        return self.cwd


@dataclass(frozen=True)
class Spec:
    """What to start: a module served with ``--host``/``--port``, and the path that says it is ready."""

    module: str
    ready_path: str = AGENT_CARD


def _server(name: str, spec: Spec, root: Path) -> ServerProcess:
    sandbox = root / name
    sandbox.mkdir(parents=True)
    return ServerProcess(python_server("-m", spec.module), ready=spec.ready_path, log=root / f"{name}.log",
                         env={"AGENTENV_SANDBOX_ROOT": str(sandbox)}, cwd=sandbox, name=name, timeout=60.0)


@contextmanager
def running(specs: dict[str, Spec], root: Path) -> Iterator[dict[str, ServerProcess]]:
    """Start every server in ``specs`` at once, wait for all, stop them all on exit."""
    with running_servers({name: _server(name, spec, root) for name, spec in specs.items()}) as started:
        yield started


SCRIPTED = Spec("prefect_agentenv.agents.scripted")
USER_SIM = Spec("prefect_agentenv.agents.user_sim")
EMAIL_ENV = Spec("prefect_agentenv.envs.email", ENV_CARD)
MOCK_MODEL = Spec("prefect_agentenv.agents.mock_model", "/health")
