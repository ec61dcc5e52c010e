"""The reference agents shipped in the package, used when no agent block names an agent id."""

from __future__ import annotations

import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class ReferenceAgent:
    """A reference agent: an A2A server module started as ``python -m <module> --host H --port P``.

    Start it with its sandbox as working folder: absolute sandbox paths (``/app/artifact``)
    map under ``$AGENTENV_SANDBOX_ROOT``, which defaults to that folder.
    """

    agent_id: str
    version: str
    module: str
    description: str

    def command(self) -> list[str]:
        """argv template; ``{host}`` and ``{port}`` are filled by the launcher."""
        return [sys.executable, "-m", self.module, "--host", "{host}", "--port", "{port}"]


REFERENCE_AGENTS: dict[str, ReferenceAgent] = {
    "scripted": ReferenceAgent("scripted", "1.0.0", "prefect_agentenv.agents.scripted",
                               "Deterministic: calls MCP tools, writes files and replies as its plan says."),
    "user-sim": ReferenceAgent("user-sim", "1.0.0", "prefect_agentenv.agents.user_sim",
                               "Plays the user in a conversation, answering {message, done}."),
    "llm": ReferenceAgent("llm", "1.0.0", "prefect_agentenv.agents.llm",
                          "A tool-using agent loop over an OpenAI-compatible model (the mock model by default)."),
    "judge": ReferenceAgent("judge", "1.0.0", "prefect_agentenv.agents.judge",
                            "Grades a reply against rubric criteria with a model."),
}
