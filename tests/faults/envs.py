"""Fault envs registered as reference envs (in-process tests monkeypatch the catalogue with them)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from prefect_agentenv.envs.catalog import REFERENCE_ENVS
from prefect_agentenv.runtime.launch.reference import ReferenceServer

FAULT_ENV = Path(__file__).with_name("fault_env.py")


@dataclass(frozen=True)
class FaultEnv(ReferenceServer):
    """A reference env entry whose command is the fault env script with extra arguments."""

    args: tuple[str, ...] = field(default=())
    shell: bool = False

    def install_paths(self) -> list[str]:
        """The fault suite's folder: a confined agent sees its script there."""
        return [str(FAULT_ENV.parent)]

    def command(self) -> list[str]:
        argv = [sys.executable, str(FAULT_ENV), "--host", "{host}", "--port", "{port}", *self.args]
        if self.shell:
            # A wrapper that does not exec: the real server is the shell's child, the run's grandchild.
            return ["sh", "-c", " ".join(argv) + "; exit $?"]
        return argv


FAULT_ENVS = {
    "dying": FaultEnv("dying", "1.0.0", "fault", "exits with code 7 after half a second", args=("--die-after", "0.5")),
    "exiting": FaultEnv("exiting", "1.0.0", "fault", "exits with code 3 at once, before it listens",
                        args=("--exit-code", "3")),
    "plain": FaultEnv("plain", "1.0.0", "fault", "serves its card only: every data-plane call fails"),
    "silent-data": FaultEnv("silent-data", "1.0.0", "fault", "serves its card; its data plane and MCP never answer",
                            args=("--silent-posts",)),
    "silent-agent": FaultEnv("silent-agent", "1.0.0", "fault", "serves an A2A card; never answers a message",
                             args=("--silent-posts", "--agent")),
    "silent": FaultEnv("silent", "1.0.0", "fault", "accepts connections and never answers", args=("--silent",)),
    "wrapped": FaultEnv("wrapped", "1.0.0", "fault", "started through sh -c, with a helper child",
                        args=("--child",), shell=True),
}


def install() -> None:
    """Add the fault envs to the reference catalogue of this process."""
    REFERENCE_ENVS.update(FAULT_ENVS)
