"""The reference envs shipped in the package, used when no AgentEnvironment block names an env id."""

from __future__ import annotations

import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class ReferenceEnv:
    """A reference env: a server module started as ``python -m <module> --host H --port P``."""

    env_id: str
    version: str
    module: str
    description: str

    def command(self) -> list[str]:
        """argv template; ``{host}`` and ``{port}`` are filled by the launcher."""
        return [sys.executable, "-m", self.module, "--host", "{host}", "--port", "{port}"]


REFERENCE_ENVS: dict[str, ReferenceEnv] = {
    "email": ReferenceEnv("email", "1.0.0", "prefect_agentenv.envs.email",
                          "A mailbox with search, read and send tools, a virtual clock and triggers."),
    "records": ReferenceEnv("records", "1.0.0", "prefect_agentenv.envs.records",
                            "Business records: patients, referrals, requests with statuses, a document inbox."),
}
