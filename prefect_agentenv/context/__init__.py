"""The run context: what steps deploy and produce, passed from a step to its dependents.

A step receives the contexts returned by its direct dependencies, merges them, adds what it
made and returns the result. A step therefore sees exactly what its ancestors produced,
whatever the timing of the other branches.

The verifiers' records and their rows are in :mod:`~prefect_agentenv.context.verifications`
(re-exported here).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from functools import reduce
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from prefect_agentenv.attribute_docs import attribute_docstrings
from prefect_agentenv.context.verifications import Aggregator, Axes, RowResult, Verification, VerificationRow
from prefect_agentenv.exceptions import ContextConflictError
from prefect_agentenv.jsontypes import JsonObject, JsonValue
from prefect_agentenv.usage import TokenUsage

__all__ = [
    "AgentPeering", "AgentSnapshot", "Confinement", "AgentTriggerRegistration", "Aggregator", "ArtifactRef", "Axes", "CollectedFiles",
    "DeployedAgent", "DeployedEnv", "DeployedSandbox", "EnvSnapshot", "FailedStep", "HumanAgent", "LoadedFiles",
    "PromptResponse", "Review", "RowResult", "RunContext", "RunMetadata", "StepRecord", "StepState", "StoppedEarly",
    "ToolAccessChange", "ToolAccessState", "UnsupportedAgentConfig", "Verification", "VerificationRow",
]


def _unset(value: object) -> bool:
    """A shared record no step wrote: left out of the report, as it was before it had a field."""
    return value is None or value == {} or value == []


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=attribute_docstrings)


class DeployedEnv(_Model):
    """An env instance deployed by a `deploy_env` step."""

    env_id: str
    """The registry id of the env."""
    version: str | None = None
    """The version that was deployed."""
    instance_id: str
    """Unique id of this instance within the run."""
    mcp_url: str
    """Streamable-HTTP MCP endpoint of the instance."""
    base_url: str | None = None
    """Root URL of the instance (card and data plane live under it)."""


class Confinement(_Model):
    """What confined a deployed agent's process (docs/security.md), as its launcher reported it."""

    mechanism: str
    """``bwrap <version>`` for a confined agent; ``docker <server version>`` for one in a container (image mode:
    the container is its isolation); ``none`` for one that runs as a plain process."""
    network: str
    """The network the agent reaches: ``confined`` (only its doors), ``public`` (the host's network, widened on
    purpose), ``bridge`` (a container's own network, its port published on the loopback) or ``host`` (the
    runner's own network: an unconfined agent's, or a container's on a daemon without a bridge network)."""
    doors: list[str] = Field(default_factory=list)
    """What a ``confined`` network lets it reach: ``model 127.0.0.1:4000``, ``mcp 127.0.0.1:5001/mcp`` (that
    path and below only), ``allowed 127.0.0.1:9000`` (a widening its block or task asked for)."""
    limits: dict[str, int] = Field(default_factory=dict)
    """Resource limits in force (``memory_mb``, ``processes``, ``cpu_seconds``): per process (rlimits), and with a
    ``cgroup`` the memory and processes of the whole agent."""
    cgroup: str | None = Field(default=None, exclude_if=_unset)
    """``v1`` or ``v2`` when the agent had a cgroup of its own bounding its ``memory_mb`` and ``processes`` as a
    whole (every process it started); left out when it had per-process rlimits only."""
    opted_out: str | None = None
    """Why an agent that could have been confined was not (``confinement: none``, ``kind: process``)."""
    mounts: list[str] = Field(default_factory=list, exclude_if=_unset)
    """What of the host a confined agent saw read-only besides its sandbox and the system, each with why:
    ``/opt/venv (venv of /opt/venv/bin/my-agent)``, ``/opt/data (install_paths)``."""

    @property
    def confined(self) -> bool:
        """Whether the agent ran confined (its scores are marked otherwise)."""
        return self.mechanism != "none"


class DeployedAgent(_Model):
    """An agent deployed by a `deploy_agent` step."""

    agent_name: str
    """The name the task gives the agent."""
    a2a_url: str
    """The agent's A2A JSON-RPC endpoint."""
    sandbox: str | None = None
    """Root folder (or container) of the agent's sandbox."""
    instance_id: str
    """Unique id of this instance within the run."""
    a2a_agent_id: str | None = None
    """The registry id the agent was deployed from."""
    model: str | None = None
    """The model the agent was configured with, if known."""
    version: str | None = Field(default=None, exclude_if=_unset)
    """The version the agent's A2A card declares (left out when it declares none)."""
    confinement: Confinement | None = Field(default=None, exclude_if=_unset)
    """How its process was confined; left out for an agent the run did not start as a local process."""


class DeployedSandbox(_Model):
    """A sandbox deployed by a `deploy_sandbox` step: a work folder (or container) with no agent."""

    sandbox_name: str
    """The name the task gives the sandbox."""
    sandbox: str
    """Root folder of the sandbox on this machine."""
    instance_id: str
    """Unique id of this sandbox within the run."""
    image: str | None = None
    """Container image the sandbox runs, when it is a container."""


class PromptResponse(_Model):
    """The outcome of a `prompt_agent` step."""

    prompt_id: str
    prompt: str
    response: str = ""
    """The agent's final reply text."""
    trajectory: str | None = None
    """Where the agent's trajectory is stored."""
    tool_call_count: int | None = None
    model: str | None = None
    error: str | None = None
    """Set when the agent failed; the reply may then be partial or empty."""
    is_truncated: bool = False
    is_timeout: bool = False
    limit: str | None = Field(default=None, exclude_if=_unset)
    """The model-call limit (``tokens``, ``cost_usd``, …, ``budget_usd``) that refused the agent's
    next call, when one did: the reply is truncated."""
    usage: TokenUsage | None = None
    """Tokens and cost of the model calls behind the reply, when the agent or its trajectory says."""


class FailedStep(_Model):
    """A row of `metadata.failed_steps`."""

    step_id: str
    step_type: str
    error: str
    error_type: str
    started_at: datetime
    duration_s: float


StepState: TypeAlias = Literal["pending", "running", "completed", "failed", "tolerated", "cancelled", "not_run"]


class StepRecord(BaseModel):
    """What happened to one step: a row of the report's ``steps`` (the scheduler keeps it up to date)."""

    model_config = ConfigDict(extra="allow")

    id: str
    type: str
    state: StepState = "pending"
    started_at: datetime | None = None
    duration_s: float | None = None
    error: str | None = None
    error_type: str | None = None
    attempts: int = 0

    @field_serializer("started_at")
    def _iso(self, value: datetime | None) -> str | None:
        """As ``isoformat`` writes it (``+00:00``, not ``Z``): the form reports always had."""
        return value.isoformat() if value else None


class UnsupportedAgentConfig(_Model):
    """A row of `metadata.unsupported_agent_config`: something the document asked to give an agent
    that the agent's card offers no way to take. It was not sent; the run went on without it."""

    step_id: str
    """The step that asked for it (deploy_agent or prompt_agent)."""
    agent_name: str
    field: str
    """What was asked, as a path: `system_prompt`, `agent_config.temperature`, `skills.review`,
    `env_ids.email`."""
    extension: str
    """The extension that would have carried it (`urn:agentenv:agent-config/v1`, ...)."""
    reason: str
    """Why it could not be sent, e.g. "the card does not declare the extension"."""


class AgentPeering(_Model):
    """A row of `metadata.agent_peerings`: the peers a peer_agents step gave one agent."""

    source_agent_name: str
    peer_agent_names: list[str]


class AgentTriggerRegistration(_Model):
    """A row of `metadata.agent_trigger_registrations`: what an agent said it registered."""

    step_id: str
    agent_name: str
    added: list[JsonValue]
    """The agent's answer (trigger ids as it names them), or the document's ids when it gave none."""


class AgentSnapshot(_Model):
    """A row of `metadata.agent_snapshots`: the universe a snapshot_agent_state step published."""

    id: str
    version: str
    source_agent_name: str
    source_prompt_id: str
    capture_step_id: str
    files: list[str]
    """The universe's files, sorted (``conversation.json``, ``trajectory.json``, ``workspace/...``)."""


class HumanAgent(_Model):
    """A row of `metadata.human_agents`: a person's A2A endpoint named as an agent of the run."""

    step_id: str
    agent_name: str
    a2a_url: str


class ToolAccessState(_Model):
    """A role's tool access as the env reported it after a change."""

    disabled: list[JsonValue]
    allowed: list[JsonValue]


class ToolAccessChange(_Model):
    """A row of `metadata.tool_access_changes`: one modify_env_tool_access step."""

    step_id: str
    env_id: str
    action: str
    role: str
    tools_requested: list[str]
    role_state_after: ToolAccessState


class _Record(BaseModel):
    """A record built-in steps keep in ``metadata``; keys a plugin or another version adds are kept."""

    model_config = ConfigDict(extra="allow", json_schema_extra=attribute_docstrings)


class ArtifactRef(_Record):
    """One version of a stored artifact."""

    id: str
    version: str
    kind: str | None = Field(default=None, exclude_if=_unset)
    """``files`` or ``environment``, where the record says."""


class CollectedFiles(_Record):
    """A row of ``metadata.collected_artifacts``: what a collect step stored."""

    artifacts: dict[str, str] = Field(default_factory=dict)
    """File path (relative to the collected folder) → its URL in the artifact store."""
    file_artifact_universe: ArtifactRef | None = None
    """The universe of the files, which a later ``load_artifact`` can copy into an agent."""
    missing: list[str] = Field(default_factory=list)
    """Files the step named that could not be read."""


class LoadedFiles(_Record):
    """A row of ``metadata.loaded_file_artifact_universes``: files copied into an agent or a sandbox."""

    step_id: str | None = None
    agent_name: str | None = None
    sandbox_name: str | None = None
    folder: str
    """Where the files went, in the agent's (or sandbox's) own paths."""
    universe: ArtifactRef
    files: list[str] = Field(default_factory=list)


class EnvSnapshot(_Record):
    """A row of ``metadata.env_snapshots``: an env's exported state, stored (the transcript diffs them)."""

    env_id: str
    artifact: ArtifactRef
    url: str | None = None
    sha256: str | None = None


class StoppedEarly(_Record):
    """What a ``teardown_sandboxes`` step stopped: an agent, an env or a sandbox, and how it went."""

    kind: str
    name: str | None = None
    label: str
    ok: bool
    error: str | None = None


class Review(_Record):
    """A person's answer to a ``review`` step."""

    label: str
    approved: bool
    note: str = ""


class RunMetadata(BaseModel):
    """Run-wide records. What built-in steps write is typed here; steps from plugins may add their own keys."""

    model_config = ConfigDict(extra="allow")

    verifications: dict[str, Verification] = Field(default_factory=dict)
    """Verifier results by verifier id (records plugins or older reports wrote are read liberally)."""
    failed_steps: list[FailedStep] = Field(default_factory=list)
    """Steps that failed without failing the task (fail_task_on_error: false)."""
    collected_artifacts: dict[str, CollectedFiles] = Field(default_factory=dict)
    """By collect step id: the files it stored."""
    loaded_file_artifact_universes: list[LoadedFiles] = Field(default_factory=list)
    """Files copied into agents and sandboxes."""
    unsupported_agent_config: list[UnsupportedAgentConfig] = Field(default_factory=list)
    """Configuration the document asked for that an agent's card cannot take (not sent; a warning)."""
    env_snapshots: dict[str, EnvSnapshot] = Field(default_factory=dict, exclude_if=_unset)
    """By snapshot_env step id: {env_id, artifact: {id, version}, url, sha256} (the transcript diffs them)."""
    default_agent_model: str | None = Field(default=None, exclude_if=_unset)
    """The model the first deploy_agent without a model of its own got; later agents get it too."""
    env_clocks: JsonObject = Field(default_factory=dict, exclude_if=_unset)
    """By sync_env_clock step id: what the env's clock reported (the env's JSON, with its env_id)."""
    env_triggers: JsonObject = Field(default_factory=dict, exclude_if=_unset)
    """By register_env_triggers step id: what the env accepted (the env's JSON)."""
    teardowns: dict[str, list[StoppedEarly]] = Field(default_factory=dict, exclude_if=_unset)
    """By teardown_sandboxes step id: each stopped agent's, env's and sandbox's outcome."""
    reviews: dict[str, Review] = Field(default_factory=dict, exclude_if=_unset)
    """By review step id: the answer."""
    script_results: JsonObject = Field(default_factory=dict, exclude_if=_unset)
    """By result id: what each run_code script returned (later scripts read the earlier ones)."""
    human_agents: list[HumanAgent] = Field(default_factory=list, exclude_if=_unset)
    """People's endpoints named as agents (deploy_human_agent)."""
    agent_peerings: list[AgentPeering] = Field(default_factory=list, exclude_if=_unset)
    """The peers each peer_agents step gave its agents."""
    agent_trigger_registrations: list[AgentTriggerRegistration] = Field(default_factory=list, exclude_if=_unset)
    """What each register_agent_triggers step's agent registered."""
    tool_access_changes: list[ToolAccessChange] = Field(default_factory=list, exclude_if=_unset)
    """Each modify_env_tool_access step and the role's access after it."""
    agent_snapshots: list[AgentSnapshot] = Field(default_factory=list, exclude_if=_unset)
    """The universes snapshot_agent_state steps published."""

    @field_validator("verifications", mode="before")
    @classmethod
    def _read_verifications(cls, value: object) -> object:
        """Records as stored (a plugin's, an older report's) are read as :meth:`Verification.read` does."""
        if not isinstance(value, Mapping):
            return value
        return {vid: Verification.read(v) if isinstance(v, Mapping) else v for vid, v in value.items()}

    @field_serializer("verifications")
    def _write_verifications(self, value: Mapping[str, Verification]) -> dict[str, Verification]:
        """A record a plugin put in as a plain mapping is written as read (its key order kept)."""
        return {vid: Verification.read(v) for vid, v in value.items()}


class RunContext(BaseModel):
    """Everything a step can see of its ancestors' work."""

    model_config = ConfigDict(extra="forbid")

    deployed_envs: dict[str, DeployedEnv] = Field(default_factory=dict)
    deployed_agents: dict[str, DeployedAgent] = Field(default_factory=dict)
    deployed_sandboxes: dict[str, DeployedSandbox] = Field(default_factory=dict)
    prompt_responses: dict[str, PromptResponse] = Field(default_factory=dict)
    metadata: RunMetadata = Field(default_factory=RunMetadata)

    @classmethod
    def merge(cls, contexts: list[RunContext], *, later_wins: bool = False) -> RunContext:
        """Merge the contexts of several dependencies into one.

        Args:
            later_wins: on a conflict keep the later context's value instead of raising (used
                for the run's final context, where a retried step may have replaced an earlier
                output that other branches still carry).

        Raises:
            ContextConflictError: two contexts hold different values under one key.
        """
        if not contexts:
            return cls()
        if len(contexts) == 1:
            return contexts[0].model_copy(deep=True)
        dumps = [ctx.model_dump(mode="python") for ctx in contexts]
        return cls.model_validate(reduce(lambda a, b: _merge_values(a, b, "context", later_wins), dumps))


def _merge_values(a: Any, b: Any, path: str, later_wins: bool) -> Any:
    if isinstance(a, dict) and isinstance(b, dict):
        out = dict(a)
        for key, value in b.items():
            out[key] = _merge_values(a[key], value, f"{path}.{key}", later_wins) if key in a else value
        return out
    if isinstance(a, list) and isinstance(b, list):
        return a + [item for item in b if item not in a]
    if a != b and not later_wins:
        raise ContextConflictError(f"dependencies disagree on {path}: {a!r} != {b!r}")
    return b
