"""Configuration of the Python agent API: the agent, the task, and where and how a rollout is scored.

Scoring settings come from two places: the task's defaults (``TaskData.scoring``) and the
agent's (``AgentConfig.scoring``). Only the fields an agent *sets* override the task's (pydantic's
``model_fields_set``), so ``ScoringConfig(mode="isolated")`` on the agent keeps the task's env
and retries; ``env`` is merged (the agent's values win), ``network`` replaced. ``ScoringConfig``
is the model task and benchmark documents use for their ``scoring`` too
(:mod:`prefect_agentenv.documents.scoring`).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from prefect_agentenv.attribute_docs import attribute_docstrings
from prefect_agentenv.documents.models import TaskDocument, dump_step
from prefect_agentenv.documents.scoring import NetworkPolicy, ScoringConfig, ScoringRetries, SkipPolicy
from prefect_agentenv.documents.validation import validate_file
from prefect_agentenv.exceptions import ConfigurationError
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.steps.base import StepModel, VerifierStep

__all__ = ["AgentConfig", "NetworkPolicy", "RetryConfig", "ScoringConfig", "SkipPolicy", "Task", "TaskData",
           "load_agent_config", "task_from_document"]

RetryConfig = ScoringRetries
"""The seed's name for the retries of isolated scoring."""


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=attribute_docstrings)


class AgentConfig(_Config):
    """The agent under test and how it runs a task."""

    agent: str = "llm"
    """Registry id of the agent (an A2AAgent block or a reference agent: ``llm``, ``scripted``…)."""
    model: str | None = None
    """The model it uses (the built-in mock model when nothing is configured)."""
    max_turns: int | None = Field(default=None, ge=1)
    """Cap on the agent's model turns in one segment, and on the segments of an interaction."""
    max_turn_tokens: int | None = Field(default=None, ge=1)
    """Cap on each model response; a response that hits it stops the run (truncated)."""
    system_prompt: str | None = None
    agent_config: JsonObject = Field(default_factory=dict)
    """Other agent-config fields (a scripted agent's plan, say)."""
    timeout_seconds: float = Field(default=600, gt=0)
    """Deadline of the rollout; past it the run is cut off (``Trace.is_timeout``)."""
    scoring: ScoringConfig = Field(default_factory=ScoringConfig)
    keep: bool = False
    """Keep the agent's sandbox after the run."""

    def deploy_config(self) -> JsonObject:
        """The agent-config fields sent when the agent is deployed."""
        fields: JsonObject = {"model": self.model, "max_turns": self.max_turns, "max_turn_tokens": self.max_turn_tokens,
                  "system_prompt": self.system_prompt}
        return {**{k: v for k, v in fields.items() if v is not None}, **self.agent_config}


class TaskData(_Config):
    """One task: what the agent is asked, the envs it works in, and how the outcome is scored."""

    prompt: str | None = None
    """The opening message; None when the caller writes the first message (``interaction``)."""
    id: str = "task"
    envs: dict[str, str | None] = Field(default_factory=dict)
    """Env ids to deploy, each with the environment artifact to load (or None)."""
    verifiers: list[JsonObject] = Field(default_factory=list)
    """Verifier steps, as in a task document (``env_state_verifier``, ``rubrics_verifier``…);
    ``prompt_id``, ``agent_name``, ``env_id`` (one env) and ``id`` are filled in when omitted."""
    scoring: ScoringConfig = Field(default_factory=ScoringConfig)
    """The task's scoring defaults; the agent's explicit settings override them."""

    @model_validator(mode="before")
    @classmethod
    def _env_list(cls, value: Any) -> Any:
        if isinstance(value, dict) and isinstance(value.get("envs"), list):
            return {**value, "envs": {e: None for e in value["envs"]}}
        return value


class Task:
    """A task to run: ``Task(TaskData(prompt=...))``, or ``Task.from_document(task_document)``."""

    def __init__(self, data: TaskData | None = None, **fields: Any) -> None:
        self.data = data if data is not None else TaskData(**fields)

    @classmethod
    def from_document(cls, document: TaskDocument | str | Path) -> Task:
        """A task document (a validated one, or its file) as a Task; see :func:`task_from_document`."""
        if not isinstance(document, TaskDocument):
            from_file = validate_file(document)
            document = from_file.raise_for_problems()
        return task_from_document(document)

    @property
    def prompt(self) -> str | None:
        return self.data.prompt

    def __repr__(self) -> str:
        return f"Task({self.data!r})"


def load_agent_config(source: str | Path) -> AgentConfig:
    """An AgentConfig from TOML: the ``[env.agent]`` table (and ``[env.agent.scoring]`` under it).

    ``source`` is a file path, or TOML text when it contains a newline or a ``[``.

    Raises:
        ValueError: the TOML has no ``[env.agent]`` table or a field is invalid.
    """
    text = source if isinstance(source, str) and ("\n" in source or "[" in source) else Path(source).read_text()
    data = tomllib.loads(text)
    table = data.get("env", {}).get("agent")
    if not isinstance(table, dict):
        raise ValueError("the TOML has no [env.agent] table")
    return AgentConfig.model_validate(table)


def task_from_document(document: TaskDocument) -> Task:
    """A task document as a Task: its envs and their artifacts, its one prompt, its verifiers.

    The document's agent is not carried over (the AgentConfig says which agent runs), and its
    ``scoring`` and ``skip_policy`` become the task's scoring defaults. A verifier's ``prompt_id`` pointing at the
    document's prompt becomes the rollout's, and an ``agent_name`` naming the prompted agent is
    dropped (filled with the agent under test).

    Raises:
        ConfigurationError: the document has several prompts, or steps a rollout has no place
            for (scenario triggers, clock moves, collections…), named with their ids.
    """
    envs: dict[str, str | None] = {}
    prompts = [s for s in document.steps if s.type == "prompt_agent"]
    if len(prompts) > 1:
        raise ConfigurationError(f"task '{document.id}' prompts {len(prompts)} times "
                                 f"({', '.join(s.id for s in prompts)}): a rollout has one opening prompt")
    prompt = prompts[0] if prompts else None
    verifiers: list[JsonObject] = []
    foreign: list[str] = []
    for step in document.steps:
        data = dump_step(step)
        env_id, artifact_id = data.get("env_id"), data.get("artifact_id")
        if step.type == "deploy_env" and isinstance(env_id, str):
            envs.setdefault(env_id, None)
        elif step.type == "load_artifact" and isinstance(env_id, str) and env_id and isinstance(artifact_id, str):
            envs[env_id] = artifact_id
        elif isinstance(step, VerifierStep):
            verifiers.append(_as_rollout_verifier(data, prompt))
        elif step.type not in ("deploy_agent", "prompt_agent"):
            foreign.append(f"{step.id} ({step.type})")
    if foreign:
        raise ConfigurationError(f"task '{document.id}' has steps an agent-API rollout cannot run: "
                                 f"{', '.join(foreign)}; run it as a task document instead")
    text = getattr(prompt, "prompt", None)
    return Task(TaskData(id=document.id, prompt=text, envs=envs, verifiers=verifiers,
                         scoring=_document_scoring(document)))


def _document_scoring(document: TaskDocument) -> ScoringConfig:
    """The document's ``scoring`` (placement, env, network, retries) and its skip policy; its
    skip_on_* defaults are already on its verifier steps."""
    policy = ScoringConfig(skip_policy=document.skip_policy)
    if document.scoring is None:
        return policy
    placement = document.scoring.model_dump(exclude_unset=True, exclude={"skip_on_truncated", "skip_on_timeout"})
    return ScoringConfig.model_validate(placement).over(policy)


def _as_rollout_verifier(data: JsonObject, prompt: StepModel | None) -> JsonObject:
    """A verifier step's JSON as a rollout's verifier: the document's prompt and agent become the rollout's."""
    data.pop("depends_on", None)
    if prompt is not None and data.get("prompt_id") == getattr(prompt, "prompt_id", None):
        data["prompt_id"] = "prompt"
    if prompt is not None and data.get("agent_name") == getattr(prompt, "agent_name", None):
        data.pop("agent_name")
    return data
