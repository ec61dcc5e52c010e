"""The A2AAgent block: how to launch one registered agent (an A2A server)."""

from __future__ import annotations

from typing import ClassVar

from prefect.blocks.core import Block
from pydantic import ConfigDict, Field, model_validator

from prefect_agentenv.blocks.secret_env import SecretEnv, reveal_env
from prefect_agentenv.runtime.launch import LaunchSpec, source_problem

A2A_CARD_PATH = "/.well-known/agent-card.json"
"""Where A2A servers publish their card; the default readiness path of an agent."""


class A2AAgent(Block):
    """How to launch one agent (an A2A server), stored under its ``a2a_agent_id``.

    Configuration only: deploy_agent reads it, creates the agent's sandbox and a launcher
    starts the instance there. Give exactly one of ``command`` (a local process; ``{host}`` and
    ``{port}`` are filled in), ``image`` (a docker container) or ``url`` (an agent that is
    already running). The agent is ready once its card answers at ``card_path``.

    Example:
        Register and load an agent::

            from prefect_agentenv.blocks import A2AAgent

            A2AAgent(
                version="1.0.0",
                command=["my-claude-agent", "--host", "{host}", "--port", "{port}"],
                secret_env={"ANTHROPIC_API_KEY": "..."},
            ).save("claude-code")

            agent = A2AAgent.load("claude-code")
            spec = agent.to_launch_spec()
    """

    model_config = ConfigDict(use_attribute_docstrings=True)

    _block_type_name: ClassVar[str] = "AgentEnv A2A Agent"
    _block_type_slug: ClassVar[str] = "agentenv-a2a-agent"
    _description: ClassVar[str] = (
        "How to launch an agent under evaluation (an A2A server): a command, a docker image "
        "or a live URL, with its version, env vars and secrets."
    )
    _code_example: ClassVar[str] = '''
```python
from prefect_agentenv.blocks import A2AAgent

agent = A2AAgent.load("BLOCK_NAME")  # the a2a_agent_id, e.g. "claude-code"
spec = agent.to_launch_spec()
```
'''

    version: str = "0.0.0"
    """Version of the agent that deploy_agent reports in the run context."""
    command: list[str] | None = None
    """argv template of a local agent server; the launcher fills in {host} and {port}."""
    image: str | None = None
    """Docker image to run instead of a local command."""
    container_port: int = Field(default=8000, gt=0, lt=65536)
    """Port the agent listens on inside its container (image only)."""
    url: str | None = None
    """Base URL of an agent that is already running; it is never started or stopped."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment variables for the agent."""
    secret_env: SecretEnv
    """Environment variables whose values are secret (API keys); never shown or logged."""
    startup_timeout_seconds: float = Field(default=60.0, gt=0)
    """How long the agent may take to answer its card."""
    card_path: str = A2A_CARD_PATH
    """Path of the agent's A2A card; it answers 200 once the agent is ready."""
    description: str | None = None
    """What the agent is, for people browsing the registry."""

    @model_validator(mode="after")
    def _one_source(self) -> A2AAgent:
        if (problem := source_problem(self.command, self.image, self.url)) is not None:
            raise ValueError(problem)
        return self

    def to_launch_spec(self) -> LaunchSpec:
        """The launcher's view of this block: ready when the card answers."""
        return LaunchSpec(command=self.command, image=self.image, container_port=self.container_port, url=self.url,
                          env=dict(self.env), secret_env=reveal_env(self.secret_env),
                          startup_timeout_seconds=self.startup_timeout_seconds, ready_path=self.card_path)
