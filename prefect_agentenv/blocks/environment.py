"""The AgentEnvironment block: how to launch one registered env."""

from __future__ import annotations

from typing import ClassVar

from prefect.blocks.core import Block
from pydantic import ConfigDict

from prefect_agentenv.blocks.documentation import DOCUMENTATION_URL
from prefect_agentenv.blocks.launch_fields import LaunchBlockFields
from prefect_agentenv.runtime.launch.base import DEFAULT_MCP_PATH, DEFAULT_READY_PATH, LaunchSpec


class AgentEnvironment(LaunchBlockFields, Block):
    """How to launch one environment (a tool server speaking MCP), stored under its env id.

    Configuration only: deploy_env reads it and a launcher starts the instance. Give exactly one
    of ``command`` (a local process; ``{host}`` and ``{port}`` are filled in), ``image`` (a
    docker container) or ``url`` (a server that is already running); the launcher follows from
    which, unless ``kind`` names another one (a plugin's, see docs/launchers.md).

    Example:
        Register and load an env::

            from prefect_agentenv.blocks import AgentEnvironment

            AgentEnvironment(
                version="1.0.0",
                command=["python", "-m", "my_envs.email", "--host", "{host}", "--port", "{port}"],
                secret_env={"MAIL_API_KEY": "..."},
            ).save("email")

            env = AgentEnvironment.load("email")
            spec = env.to_launch_spec()
    """

    model_config = ConfigDict(use_attribute_docstrings=True)

    _block_type_name: ClassVar[str] = "AgentEnv Environment"
    _block_type_slug: ClassVar[str] = "agentenv-environment"
    _documentation_url = DOCUMENTATION_URL
    _description: ClassVar[str] = (
        "How to launch an agent-evaluation environment (an MCP tool server): a command, "
        "a docker image or a live URL, with its version, env vars and secrets."
    )
    _code_example: ClassVar[str] = '''
```python
from prefect_agentenv.blocks import AgentEnvironment

env = AgentEnvironment.load("BLOCK_NAME")  # the env id, e.g. "email"
spec = env.to_launch_spec()
```
'''

    ready_path: str = DEFAULT_READY_PATH
    """Path that answers 200 once the server is ready."""
    mcp_path: str = DEFAULT_MCP_PATH
    """Path of the server's MCP endpoint."""
    description: str | None = None
    """What the env offers, for people browsing the registry."""

    def to_launch_spec(self) -> LaunchSpec:
        """The launcher's view of this block."""
        return self.launch_spec(ready_path=self.ready_path, mcp_path=self.mcp_path)
