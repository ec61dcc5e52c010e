"""The A2AAgent block: how to launch one registered agent (an A2A server)."""

from __future__ import annotations

from typing import ClassVar

from prefect.blocks.core import Block
from pydantic import ConfigDict

from prefect_agentenv.blocks.documentation import DOCUMENTATION_URL
from prefect_agentenv.blocks.launch_fields import LaunchBlockFields
from prefect_agentenv.runtime.launch.base import LaunchSpec

A2A_CARD_PATH = "/.well-known/agent-card.json"
"""Where A2A servers publish their card; the default readiness path of an agent."""


class A2AAgent(LaunchBlockFields, Block):
    """How to launch one agent (an A2A server), stored under its ``a2a_agent_id``.

    Configuration only: deploy_agent reads it, creates the agent's sandbox and a launcher
    starts the instance there. Give exactly one of ``command`` (a local process; ``{host}`` and
    ``{port}`` are filled in), ``image`` (a docker container) or ``url`` (an agent that is
    already running); the launcher follows from which, unless ``kind`` names another one (a
    plugin's, see docs/launchers.md). The agent is ready once its card answers at ``card_path``.

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
    _documentation_url = DOCUMENTATION_URL
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

    card_path: str = A2A_CARD_PATH
    """Path of the agent's A2A card; it answers 200 once the agent is ready."""
    description: str | None = None
    """What the agent is, for people browsing the registry."""

    def to_launch_spec(self) -> LaunchSpec:
        """The launcher's view of this block: ready when the card answers."""
        return self.launch_spec(ready_path=self.card_path)
