"""The AgentEnvironment block: how to launch one registered env."""

from __future__ import annotations

from typing import ClassVar

from pydantic import ConfigDict, Field, model_validator
from prefect.blocks.core import Block

from prefect_agentenv.blocks.secret_env import SecretEnv, reveal_env
from prefect_agentenv.runtime.launch import DEFAULT_MCP_PATH, DEFAULT_READY_PATH, LaunchSpec, source_problem


class AgentEnvironment(Block):
    """How to launch one environment (a tool server speaking MCP), stored under its env id.

    Configuration only: deploy_env reads it and a launcher starts the instance. Give exactly one
    of ``command`` (a local process; ``{host}`` and ``{port}`` are filled in), ``image`` (a
    docker container) or ``url`` (a server that is already running).

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

    version: str = "0.0.0"
    """Version of the env that deploy_env reports in the run context."""
    command: list[str] | None = None
    """argv template of a local server; the launcher fills in {host} and {port}."""
    image: str | None = None
    """Docker image to run instead of a local command."""
    container_port: int = Field(default=8000, gt=0, lt=65536)
    """Port the server listens on inside its container (image only)."""
    url: str | None = None
    """Base URL of a server that is already running; it is never started or stopped."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment variables for the server."""
    secret_env: SecretEnv
    """Environment variables whose values are secret (API keys); never shown or logged."""
    startup_timeout_seconds: float = Field(default=60.0, gt=0)
    """How long the server may take to answer its card."""
    ready_path: str = DEFAULT_READY_PATH
    """Path that answers 200 once the server is ready."""
    mcp_path: str = DEFAULT_MCP_PATH
    """Path of the server's MCP endpoint."""
    description: str | None = None
    """What the env offers, for people browsing the registry."""

    @model_validator(mode="after")
    def _one_source(self) -> AgentEnvironment:
        if (problem := source_problem(self.command, self.image, self.url)) is not None:
            raise ValueError(problem)
        return self

    def to_launch_spec(self) -> LaunchSpec:
        """The launcher's view of this block."""
        return LaunchSpec(command=self.command, image=self.image, container_port=self.container_port, url=self.url,
                          env=dict(self.env), secret_env=reveal_env(self.secret_env),
                          startup_timeout_seconds=self.startup_timeout_seconds, ready_path=self.ready_path,
                          mcp_path=self.mcp_path)
