"""An agent's state and sandbox: configured MCP servers, agent-config, skills, trajectories.

The extensions of :mod:`prefect_agentenv.agents.server` write here; backends read it. Each task's
trajectory is saved as ``trajectories/<task_id>.json`` in the working folder (the sandbox).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypedDict

from pydantic import BaseModel, ConfigDict, Field, model_validator

from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.runtime.resources.sandbox import sandbox_path, sandbox_root


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PublicMcpServer(TypedDict):
    """An MCP server as ``GET /ext/mcp-config`` lists it."""

    name: str | None
    url: str
    headers: list[str]
    """Header names only."""


class McpServerConfig(_Request):
    """An MCP server the agent was given through the mcp-config extension."""

    url: str = Field(min_length=1)
    name: str | None = None
    headers: dict[str, str] | None = None

    def public(self) -> PublicMcpServer:
        """What ``GET /ext/mcp-config`` shows: header names only, since values may be secrets."""
        return {"name": self.name, "url": self.url, "headers": sorted(self.headers or {})}


class SkillConfig(_Request):
    """A skill registered through the skill-config extension."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    description: str = ""
    skill_md: str | None = None
    content: str | None = None

    @model_validator(mode="after")
    def _one_body(self) -> SkillConfig:
        if (self.skill_md is None) == (self.content is None):
            raise ValueError("give the skill's text as skill_md (or content), exactly once")
        return self

    @property
    def text(self) -> str:
        return self.skill_md if self.skill_md is not None else self.content or ""


class TrajectoryRequest(_Request):
    task_id: str | None = None
    context_id: str | None = None

    @model_validator(mode="after")
    def _one_key(self) -> TrajectoryRequest:
        if (self.task_id is None) == (self.context_id is None):
            raise ValueError("give task_id or context_id, exactly one")
        return self


@dataclass
class Trajectory:
    """The events of one task, saved as JSON in the sandbox after every prompt."""

    task_id: str
    context_id: str
    path: Path
    events: list[dict[str, Any]] = field(default_factory=list)

    def record(self, kind: str, **fields: Any) -> None:
        """Append one event (``kind`` is message, model, tool_call, tool_result or error)."""
        self.events.append({"kind": kind, "at": datetime.now(UTC).isoformat(), **fields})

    def save(self) -> None:
        """Write atomically, so a reader never sees half a file."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        scratch = self.path.with_suffix(".json.tmp")
        scratch.write_text(json.dumps({"task_id": self.task_id, "context_id": self.context_id,
                                       "events": self.events}, indent=1, default=str))
        scratch.replace(self.path)


class AgentState:
    """What an agent was configured with and what it did: the extensions read and write it."""

    def __init__(self, *, config_fields: Sequence[str], workdir: Path | None = None,
                 root: Path | None = None) -> None:
        self.workdir = (workdir or Path.cwd()).resolve()
        self.root = (root or sandbox_root()).resolve()
        self.config_fields = tuple(config_fields)
        self.mcp_servers: dict[str, McpServerConfig] = {}
        self.config: JsonObject = {}
        self.skills: dict[str, SkillConfig] = {}
        self.trajectories: dict[str, Trajectory] = {}
        self._turns: Counter[str] = Counter()

    def path(self, path: str | os.PathLike[str]) -> Path:
        """Where a path the agent was told about lives on this machine.

        The host's mapping (:func:`~prefect_agentenv.runtime.resources.sandbox.sandbox_path`), so an agent
        and the run agree on every path: absolute ones map under the sandbox root, relative ones
        are relative to it (the agent's cwd when a launcher starts it).

        Raises:
            UnsafeSandboxPathError: (a ``ValueError``) the path leaves the sandbox or holds a NUL byte.
        """
        return sandbox_path(path, root=self.root)

    def add_mcp_server(self, server: McpServerConfig) -> McpServerConfig:
        """Register (or replace, by name) an MCP server; unnamed ones get ``mcp-N``."""
        named = server if server.name else server.model_copy(update={"name": f"mcp-{len(self.mcp_servers) + 1}"})
        self.mcp_servers[named.name or ""] = named
        return named

    def add_skill(self, skill: SkillConfig) -> Path:
        """Register a skill and write its text to ``skills/<name>/SKILL.md``, where agents look."""
        self.skills[skill.name] = skill
        target = self.workdir / "skills" / skill.name / "SKILL.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(skill.text)
        return target

    def start_task(self, task_id: str, context_id: str) -> tuple[Trajectory, int]:
        """A new trajectory for the task, and the task's turn number (1-based) in its context."""
        trajectory = Trajectory(task_id, context_id, self.workdir / "trajectories" / f"{task_id}.json")
        self.trajectories[task_id] = trajectory
        self._turns[context_id] += 1
        return trajectory, self._turns[context_id]

    def trajectory(self, request: TrajectoryRequest) -> dict[str, Any] | None:
        """The events of one task, or of every task of a context in order; ``None`` if unknown."""
        if request.task_id is not None:
            found = self.trajectories.get(request.task_id)
            if found is None:
                return None
            return {"task_id": found.task_id, "context_id": found.context_id, "trajectory": found.events,
                    "path": str(found.path)}
        tasks = [t for t in self.trajectories.values() if t.context_id == request.context_id]
        if not tasks:
            return None
        return {"context_id": request.context_id, "trajectory": [e for t in tasks for e in t.events]}
