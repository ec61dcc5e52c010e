"""Settings of prefect-agentenv, read from ``PREFECT_AGENTENV_*`` environment variables.

This is the only module that reads the environment for configuration; everything else asks
:func:`get_settings`. (``${VAR}`` references in documents are resolved by the document loader.)
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from prefect.settings.base import PrefectBaseSettings
from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import SettingsConfigDict


class AgentEnvSettings(PrefectBaseSettings):
    """Process-wide settings; every field can be set as ``PREFECT_AGENTENV_<NAME>``."""

    model_config = SettingsConfigDict(env_prefix="PREFECT_AGENTENV_", extra="ignore")

    home: Path = Field(default=Path(".agentenv"))
    """Working folder for runs: logs, sandboxes, reports and the local artifact store."""
    artifact_store_block: str | None = None
    """Name of an ArtifactStore block to use instead of the local folder under ``home``."""
    server: Literal["auto", "local", "ephemeral"] = "auto"
    """The Prefect server of the commands when ``PREFECT_API_URL`` names none: ``local`` the home's
    own server, started once in the background and reused; ``ephemeral`` Prefect's temporary server,
    started and stopped by every command; ``auto`` the local server, except in CI or without a
    terminal on stdin, where the local server is used only if it is already running (a pipeline is
    never left with a server it did not ask for)."""
    server_port: int = Field(default=4200, ge=1, le=65535)
    """The port the local server asks for first (the port it had last time wins; a free one when
    both are taken)."""
    # Named ci_marker because Prefect's settings source drops variables whose name equals a field
    # name (see model_base_url); CI systems set CI to "true", "1" or their own name.
    ci_marker: str | None = Field(default=None, validation_alias=AliasChoices("CI"))
    """The ``CI`` variable, which CI systems set: in CI the ``auto`` server is the temporary one."""
    tag_task_runs: Literal["auto"] | bool = "auto"
    """Tags of each step's task run: ``auto`` the step type and the run's tags that have a Prefect
    concurrency limit (so a tag limit still caps a step type), ``true`` all of them, ``false``
    none. Every tag costs an API request per task run, which a busy SQLite-backed server can
    stall for seconds (see ``flows/adapters/task_tags.py`` and benchmarks/)."""
    retry_delay_seconds: float = Field(default=1.0, ge=0)
    """Wait before each retry of a step whose retry_config retries only itself (Prefect task retries)."""
    concurrency_lease_seconds: float = Field(default=6 * 3600, ge=60, le=86400)
    """How long a slot of an ``env:<id>``/``agent:<id>`` concurrency limit is held at most (a lease, so
    a killed run cannot keep it); longer than any run."""
    teardown_timeout_seconds: float = 30.0
    """Upper bound for stopping everything a run started."""
    step_teardown_timeout_seconds: float = 10.0
    """Upper bound for stopping one instance."""
    http_connect_timeout_seconds: float = Field(default=5.0, gt=0)
    """Connect timeout of the run's HTTP client (env cards, data planes, readiness probes)."""
    http_read_timeout_seconds: float = Field(default=30.0, gt=0)
    """Read (and write) timeout of the run's HTTP client: a peer that accepts a connection but never
    answers fails after this long."""
    s3_connect_timeout_seconds: float = Field(default=5.0, gt=0)
    """Connect timeout of S3 requests."""
    s3_read_timeout_seconds: float = Field(default=30.0, gt=0)
    """Read timeout of S3 requests (an endpoint that accepts connections but never answers)."""
    s3_max_attempts: int = Field(default=2, ge=1)
    """Attempts per S3 request (botocore's standard retry mode, with backoff)."""
    cancel_poll_seconds: float = 2.0
    """How often a run against a Prefect server checks whether it was cancelled (0: never)."""
    harness_dir: Path | None = None
    """Folder the coding-agent harnesses are installed into (``agent install``); ``<home>/harnesses``
    when unset. Point several homes at one folder to install each harness once."""
    harness_python: str | None = None
    """Python interpreter a harness that needs a newer one than this (OpenHands: 3.12) builds its venv
    on; found on PATH or among pyenv's versions when unset."""
    agent_confinement: Literal["confined", "none"] = "confined"
    """How agents started from a command run when their launch names no kind: ``confined`` under
    bubblewrap (docs/security.md; a deploy fails where it cannot work), ``none`` as plain processes
    (recorded as unconfined). A block's own ``confinement`` or ``kind`` wins."""
    agent_network: Literal["confined", "public"] = "confined"
    """The network of a confined agent whose launch names none: ``confined``, its own namespace that reaches
    only its model endpoint and its envs' MCP paths (docs/security.md); ``public``, the host's (recorded). A
    block's own ``network`` wins."""
    verify_python: str | None = None
    """Python interpreter that runs env_outcome_verifier scripts (this one when unset). Scripts written
    for another runtime (AgentEnv's examples use the mcp 1.x client) need an interpreter that has it."""
    # Named model_* because Prefect's settings source drops variables whose name equals a field
    # name: a field called openai_base_url would silently ignore OPENAI_BASE_URL.
    model_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("PREFECT_AGENTENV_OPENAI_BASE_URL", "OPENAI_BASE_URL")
    )
    """OpenAI-compatible endpoint used when no ModelEndpoint block is configured."""
    model_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("PREFECT_AGENTENV_OPENAI_API_KEY", "OPENAI_API_KEY")
    )
    """Its API key."""
    model_responses_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("PREFECT_AGENTENV_RESPONSES_BASE_URL"))
    """Where OpenAI's Responses API goes (Codex), when not to ``OPENAI_BASE_URL``."""
    model_responses_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("PREFECT_AGENTENV_RESPONSES_API_KEY"))
    """Its key (``OPENAI_API_KEY`` when unset)."""
    model_messages_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("PREFECT_AGENTENV_ANTHROPIC_BASE_URL", "ANTHROPIC_BASE_URL"))
    """Where Anthropic's Messages API goes (Claude Code), e.g. https://api.anthropic.com/v1, when not
    to ``OPENAI_BASE_URL``; it is sent Anthropic's ``x-api-key``."""
    model_messages_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("PREFECT_AGENTENV_ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY"))
    """Its key."""

    @property
    def openai_base_url(self) -> str | None:
        return self.model_base_url

    @property
    def openai_api_key(self) -> SecretStr | None:
        return self.model_api_key

    @property
    def in_ci(self) -> bool:
        """Whether a CI system runs this process (its ``CI`` variable set, and not to a no)."""
        return (self.ci_marker or "").strip().lower() not in ("", "0", "false", "no")

    @property
    def server_dir(self) -> Path:
        return self.home / "server"

    @property
    def runs_dir(self) -> Path:
        return self.home / "runs"

    @property
    def artifacts_dir(self) -> Path:
        return self.home / "store"

    @property
    def harnesses_dir(self) -> Path:
        return self.harness_dir if self.harness_dir is not None else self.home / "harnesses"


@lru_cache(maxsize=1)
def get_settings() -> AgentEnvSettings:
    """The settings of this process (cached; call ``get_settings.cache_clear()`` after changing env vars)."""
    return AgentEnvSettings()
