"""The settings of a Harbor task (its ``task.toml``), as a typed model read liberally.

Written to accept what Harbor 0.22–0.25 accepts: an old root ``version`` key is ``schema_version``,
the deprecated ``memory = "2G"`` / ``storage = "10G"`` become ``memory_mb`` / ``storage_mb``, and
``allow_internet = false`` is ``network_mode = "no-network"``. Keys this runner does not know are
kept aside (``extra="allow"``) so a newer Harbor's task still loads; the fields it knows but cannot
honour here (GPUs, TPUs, Windows) are refused by :func:`unsupported`, each by name.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from prefect_agentenv.attribute_docs import attribute_docstrings

NetworkMode = Literal["public", "no-network", "allowlist"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="allow", json_schema_extra=attribute_docstrings, populate_by_name=True)


class Author(_Section):
    name: str | None = None
    email: str | None = None


class TaskInfo(_Section):
    """``[task]``: who the task is and what it is called."""

    name: str | None = None
    """``org/name``; the folder's name when absent."""
    version: str | None = None
    description: str | None = None
    authors: list[Author] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)


class Healthcheck(_Section):
    """``[environment.healthcheck]``: a command that must succeed before the agent starts."""

    command: str
    interval_sec: float = Field(default=5.0, gt=0)
    timeout_sec: float = Field(default=30.0, gt=0)
    start_period_sec: float = Field(default=0.0, ge=0)
    start_interval_sec: float = Field(default=5.0, gt=0)
    retries: int = Field(default=3, ge=0)


class McpServer(_Section):
    """``[[environment.mcp_servers]]``: a tool server given to the agent."""

    name: str
    transport: Literal["sse", "streamable-http", "stdio"] = "sse"
    url: str | None = None
    command: str | None = None
    args: list[str] = Field(default_factory=list)


class EnvironmentConfig(_Section):
    """``[environment]``: the image and what it may use."""

    build_timeout_sec: float = Field(default=600.0, gt=0)
    docker_image: str | None = None
    os: Literal["linux", "windows"] = "linux"
    workdir: str | None = Field(default=None, pattern=r"^/")
    """Overrides the image's WORKDIR."""
    cpus: float | None = Field(default=None, gt=0)
    memory_mb: int | None = Field(default=None, gt=0)
    storage_mb: int | None = Field(default=None, gt=0)
    gpus: int | None = Field(default=None, ge=0)
    gpu_types: list[str] | None = None
    tpu: dict[str, Any] | None = None
    network_mode: NetworkMode = "public"
    allowed_hosts: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    """Variables of the environment; ``${VAR}`` and ``${VAR:-default}`` are filled from the host."""
    healthcheck: Healthcheck | None = None
    mcp_servers: list[McpServer] = Field(default_factory=list)
    skills_dir: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _deprecated_forms(cls, data: Any) -> Any:
        """``memory``/``storage`` as ``"2G"``; ``allow_internet``: Harbor's older spellings."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for old, new in (("memory", "memory_mb"), ("storage", "storage_mb")):
            if old in data:
                value = data.pop(old)
                data.setdefault(new, size_mb(value) if isinstance(value, str) else value)
        if "allow_internet" in data:
            allowed = data.pop("allow_internet")
            if allowed is False:
                data.setdefault("network_mode", "no-network")
        return data


class AgentConfig(_Section):
    """``[agent]``: the agent's time and identity."""

    timeout_sec: float | None = Field(default=None, gt=0)
    """None: no time limit (the run's own timeout still holds)."""
    user: str | int | None = None
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] | None = None


class CollectHook(_Section):
    command: str
    service: str = "main"
    timeout_sec: float = Field(default=60.0, gt=0)
    user: str | int | None = None


class VerifierConfig(_Section):
    """``[verifier]``: how the tests run."""

    timeout_sec: float = Field(default=600.0, gt=0)
    env: dict[str, str] = Field(default_factory=dict)
    user: str | int | None = None
    environment_mode: Literal["shared", "separate"] = "shared"
    environment: EnvironmentConfig | None = None
    collect: list[CollectHook] = Field(default_factory=list)
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] | None = None


class SolutionConfig(_Section):
    env: dict[str, str] = Field(default_factory=dict)


class ArtifactSpec(_Section):
    """A file or folder the separate verifier receives at its original path."""

    source: str = Field(pattern=r"^/")
    destination: str | None = None
    exclude: list[str] = Field(default_factory=list)
    service: str = "main"


class StepConfig(_Section):
    """``[[steps]]``: one step of a multi-step task."""

    name: str = Field(min_length=1)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    verifier: VerifierConfig = Field(default_factory=VerifierConfig)
    min_reward: float | dict[str, float] | None = None
    """Stop after this step when its reward is under the threshold (one per key for a dict)."""
    healthcheck: Healthcheck | None = None
    artifacts: list[str | ArtifactSpec] = Field(default_factory=list)


class TaskConfig(_Section):
    """A whole ``task.toml``."""

    schema_version: str = "1.4"
    source: str | None = None
    task: TaskInfo = Field(default_factory=TaskInfo)
    metadata: dict[str, Any] = Field(default_factory=dict)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    verifier: VerifierConfig = Field(default_factory=VerifierConfig)
    solution: SolutionConfig = Field(default_factory=SolutionConfig)
    environment: EnvironmentConfig = Field(default_factory=EnvironmentConfig)
    artifacts: list[str | ArtifactSpec] = Field(default_factory=list)
    multi_step_reward_strategy: Literal["mean", "final"] | None = None
    steps: list[StepConfig] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _old_version_key(cls, data: Any) -> Any:
        """A root ``version`` (Terminal-Bench 2.0's files) is the schema version."""
        if isinstance(data, dict) and "version" in data:
            data = dict(data)
            version = data.pop("version")
            data.setdefault("schema_version", str(version))
        return data


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*$", re.IGNORECASE)


def size_mb(text: str) -> int:
    """``"2G"``, ``"512M"``, ``"10GB"`` in megabytes (Harbor's deprecated size strings)."""
    match = _SIZE.match(text)
    if match is None:
        raise ValueError(f"not a size: {text!r} (write a number with K, M, G or T, e.g. '2G')")
    scale = {"": 1 / (1024 * 1024), "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}[match.group(2).upper()]
    return max(1, int(float(match.group(1)) * scale))


def unsupported_raw(raw: dict[str, Any]) -> list[tuple[str, str]]:
    """(field, why) for the hardware and OS a task asks for that this runner cannot give, read from the raw
    ``task.toml`` so they are named even when other fields are invalid."""
    found: list[tuple[str, str]] = []
    verifier: dict[str, Any] = raw["verifier"] if isinstance(raw.get("verifier"), dict) else {}
    for where, env in (("environment", raw.get("environment")), ("verifier.environment", verifier.get("environment"))):
        if not isinstance(env, dict):
            continue
        gpus = env.get("gpus")
        if isinstance(gpus, int | float) and not isinstance(gpus, bool) and gpus > 0:
            found.append((f"{where}.gpus", f"{gpus:g} GPU(s) asked for: this runner starts no GPU environments"))
        if env.get("gpu_types"):
            found.append((f"{where}.gpu_types", "GPU types asked for: this runner starts no GPU environments"))
        if env.get("tpu"):
            found.append((f"{where}.tpu", "a TPU asked for: this runner starts no TPU environments"))
        if env.get("os") == "windows":
            found.append((f"{where}.os", "a Windows environment: this runner runs Linux images only"))
    return found


def unsupported(config: TaskConfig) -> list[tuple[str, str]]:
    """(field, why) for each network or hook setting of a valid task that this runner cannot honour."""
    found: list[tuple[str, str]] = []
    why = ("allowlist egress: the local daemon here has no network to allow hosts on "
           "(use no-network, or public where the daemon has a bridge)")
    envs = [("environment", config.environment)]
    if config.verifier.environment is not None:
        envs.append(("verifier.environment", config.verifier.environment))
    found += [(f"{where}.network_mode", why) for where, env in envs if env.network_mode == "allowlist"]
    found += [(f"{phase}.network_mode", why) for phase in ("agent", "verifier")
              if getattr(config, phase).network_mode == "allowlist"]
    for i, step in enumerate(config.steps):
        found += [(f"steps[{i}].{phase}.network_mode", why) for phase in ("agent", "verifier")
                  if getattr(step, phase).network_mode == "allowlist"]
    if config.verifier.collect:
        found.append(("verifier.collect", "collect hooks run in a compose service of Harbor's own, which this runner does not have"))
    return found
