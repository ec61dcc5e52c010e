"""The reference agents shipped in the package, used when no agent block names an agent id."""

from __future__ import annotations

from prefect_agentenv.runtime.launch.reference import ReferenceServer

ReferenceAgent = ReferenceServer
"""A reference agent. Start it with its sandbox as working folder: absolute sandbox paths
(``/app/artifact``) map under ``$AGENTENV_SANDBOX_ROOT``, which defaults to that folder."""


REFERENCE_AGENTS: dict[str, ReferenceAgent] = {
    "scripted": ReferenceAgent("scripted", "1.0.0", "prefect_agentenv.agents.scripted",
                               "Deterministic: calls MCP tools, writes files and replies as its plan says.",
                               uses_model=False),
    "user-sim": ReferenceAgent("user-sim", "1.0.0", "prefect_agentenv.agents.user_sim",
                               "Plays the user in a conversation, answering {message, done}."),
    "llm": ReferenceAgent("llm", "1.0.0", "prefect_agentenv.agents.llm",
                          "A tool-using agent loop over an OpenAI-compatible model (the mock model by default)."),
    "judge": ReferenceAgent("judge", "1.0.0", "prefect_agentenv.agents.judge",
                            "Grades a reply against rubric criteria with a model."),
}
