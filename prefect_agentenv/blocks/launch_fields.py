"""The fields the env and agent blocks share, on top of the launcher's own (``LaunchSource``).

A pydantic mixin rather than a ``Block`` base: Prefect registers every ``Block`` subclass it
imports as a block type of its own, and a base type would show up in the UI's catalogue.
"""

from __future__ import annotations

from typing import Any

from prefect_agentenv.blocks.secret_env import SecretEnv, reveal_env
from prefect_agentenv.runtime.launch.base import LaunchSource, LaunchSpec


class LaunchBlockFields(LaunchSource):
    """A launch source with a version and secrets: what an env or agent block stores."""

    version: str = "0.0.0"
    """Version of the server, reported in the run context when it is deployed."""
    secret_env: SecretEnv
    """Environment variables whose values are secret (API keys); never shown or logged."""

    def launch_spec(self, **checks: Any) -> LaunchSpec:
        """The launcher's view of this block; ``checks`` are the spec's paths (ready, MCP)."""
        source = self.model_dump(include=set(LaunchSource.model_fields))
        return LaunchSpec(**source, secret_env=reveal_env(self.secret_env), **checks)
