"""The run context: what steps deploy and produce, passed from a step to its dependents.

A step receives the contexts returned by its direct dependencies, merges them, adds what it
made and returns the result. A step therefore sees exactly what its ancestors produced,
whatever the timing of the other branches.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from prefect_agentenv.exceptions import ContextConflictError
from prefect_agentenv.jsontypes import JsonValue


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


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


class FailedStep(_Model):
    """A row of `metadata.failed_steps`."""

    step_id: str
    step_type: str
    error: str
    error_type: str
    started_at: datetime
    duration_s: float


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


def _unset(value: object) -> bool:
    """A shared record no step wrote: left out of the report, as it was before it had a field."""
    return value is None or value == {} or value == []


class RunMetadata(BaseModel):
    """Run-wide records. What built-in steps write is typed here; steps from plugins may add their own keys."""

    model_config = ConfigDict(extra="allow")

    verifications: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Verifier results by verifier id: {format?, results: [rows], score, ...}."""
    failed_steps: list[FailedStep] = Field(default_factory=list)
    """Steps that failed without failing the task (fail_task_on_error: false)."""
    collected_artifacts: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """By collect step id: {artifacts: {path: url}, file_artifact_universe: {id, version}}."""
    loaded_file_artifact_universes: list[dict[str, Any]] = Field(default_factory=list)
    """Files copied into agents: {agent_name, folder, universe, files}."""
    unsupported_agent_config: list[UnsupportedAgentConfig] = Field(default_factory=list)
    """Configuration the document asked for that an agent's card cannot take (not sent; a warning)."""
    env_snapshots: dict[str, dict[str, Any]] = Field(default_factory=dict, exclude_if=_unset)
    """By snapshot_env step id: {env_id, artifact: {id, version}, url, sha256} (the transcript diffs them)."""
    default_agent_model: str | None = Field(default=None, exclude_if=_unset)
    """The model the first deploy_agent without a model of its own got; later agents get it too."""
    env_clocks: dict[str, Any] = Field(default_factory=dict, exclude_if=_unset)
    """By sync_env_clock step id: what the env's clock reported."""
    env_triggers: dict[str, Any] = Field(default_factory=dict, exclude_if=_unset)
    """By register_env_triggers step id: what the env accepted."""
    teardowns: dict[str, Any] = Field(default_factory=dict, exclude_if=_unset)
    """By teardown_sandboxes step id: each stopped agent's and env's outcome."""
    reviews: dict[str, Any] = Field(default_factory=dict, exclude_if=_unset)
    """By review step id: {label, approved, note}."""
    script_results: dict[str, Any] = Field(default_factory=dict, exclude_if=_unset)
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
        merged: dict[str, Any] = {}
        for ctx in contexts:
            merged = _merge_values(merged, ctx.model_dump(mode="python"), "context", later_wins)
        return cls.model_validate(merged)


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
