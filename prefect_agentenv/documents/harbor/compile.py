"""A Harbor task folder as a task document, and a dataset folder as a benchmark.

The steps it compiles to (a multi-step task repeats the agent and verifier per step, suffixed
``-<step name>``, each step after the one before)::

    environment   harbor_environment: the image built (cached by content) and started
    agent         harbor_agent: oracle / nop / an agent, given instruction.md, acting in the environment
    verifier      harbor_verifier: /tests uploaded, test.sh run, reward.json / reward.txt read

The environment is torn down with the run, as every deployed thing is.
"""

from __future__ import annotations

import os
from pathlib import Path

from prefect_agentenv.documents.harbor.config import McpServer
from prefect_agentenv.documents.harbor.folder import (
    HarborTask,
    dataset_tasks,
    is_task_folder,
    load_task_folder,
    sha256_folder,
    sha256_text,
)
from prefect_agentenv.jsontypes import JsonObject, JsonValue

ENVIRONMENT = "environment"
DEFAULT_AGENT = "oracle"
"""The agent a Harbor task runs with when no override names one, as Harbor's own runner does."""


def compile_task(task: HarborTask) -> JsonObject:
    """The raw task document of a loaded task folder (validate it with ``validate_data``)."""
    root = str(task.root.resolve())
    environment: JsonObject = {
        "id": ENVIRONMENT, "type": "harbor_environment", "task_dir": root, "sandbox_name": ENVIRONMENT,
        "task_toml_sha256": task.task_toml_sha256, "environment_sha256": sha256_folder(task.environment)}
    not_applied = _not_applied(task)
    if not_applied:
        environment["not_applied"] = not_applied
    servers = task.config.environment.mcp_servers
    if servers:
        environment["mcp_servers"] = [s.name for s in servers]
        environment["given_mcp_servers"] = [s.name for s in servers if given_server(s)]
    steps: list[JsonValue] = [environment]
    previous = ENVIRONMENT
    many = task.multi_step
    strategy = task.config.multi_step_reward_strategy or "mean"
    for k, files in enumerate(task.steps):
        suffix = f"-{files.name}" if many else ""
        agent_id, verifier_id = f"agent{suffix}", f"verifier{suffix}"
        final = k == len(task.steps) - 1
        agent: JsonObject = {
            "id": agent_id, "type": "harbor_agent", "task_dir": root, "sandbox_name": ENVIRONMENT,
            "step_name": files.name if many else None, "depends_on": [previous],
            "instruction_sha256": sha256_text(files.instruction), "solution_sha256": sha256_folder(files.solution)}
        verifier: JsonObject = {
            "id": verifier_id, "type": "harbor_verifier", "verifier_id": verifier_id, "task_dir": root,
            "sandbox_name": ENVIRONMENT, "step_name": files.name if many else None, "depends_on": [agent_id],
            "agent_step": agent_id, "tests_sha256": sha256_folder(task.root / "tests", files.tests),
            "weight": 1.0 if final or strategy == "mean" else 0.0}
        if many and k > 0:
            agent["after_verifier"] = f"verifier-{task.steps[k - 1].name}"
        steps += [agent, verifier]
        previous = verifier_id
    return {"id": task.slug, "description": task.config.task.description or task.name,
            "tags": ["harbor", *task.config.task.keywords], "steps": steps}


def given_server(server: McpServer) -> bool:
    """Whether the agent is given the task's MCP server: a stdio one with a command (run in the environment), or
    one with a URL (reached in the environment's network)."""
    return bool(server.command) if server.transport == "stdio" else bool(server.url)


def _not_applied(task: HarborTask) -> list[JsonValue]:
    """The task's settings this runner reads and does not apply, each with why (``validate`` prints them)."""
    config = task.config.environment
    said: list[JsonValue] = []
    if config.storage_mb is not None:
        said.append(f"[environment].storage_mb = {config.storage_mb}: not enforced (a container on the local "
                    "daemon's overlay2 storage has no disk quota; Harbor's own docker environment does not "
                    "enforce it either)")
    if config.skills_dir:
        said.append(f"[environment].skills_dir = {config.skills_dir!r}: not given to the agent")
    return said


def task_document_data(folder: Path) -> JsonObject:
    """Load and compile a task folder.

    Raises:
        HarborTaskError: the folder has problems.
    """
    return compile_task(load_task_folder(folder))


def dataset_benchmark_data(folder: Path) -> JsonObject:
    """A dataset folder as a benchmark document whose base is the dataset's parent folder."""
    tasks: list[JsonValue] = []
    for task_dir in dataset_tasks(folder):
        tasks.append({"id": _task_id(task_dir), "path": os.path.relpath(task_dir, folder.parent)})
    name = folder.resolve().name
    return {"name": name, "slug": _slug(name), "tasks": tasks}


def _task_id(task_dir: Path) -> str:
    return "".join(c if c.isalnum() or c in "_.-" else "-" for c in task_dir.name).lstrip("._-") or "task"


def _slug(name: str) -> str:
    words = "".join(c.lower() if c.isalnum() else " " for c in name).split()
    return "-".join(words) or "harbor-dataset"


__all__ = ["compile_task", "dataset_benchmark_data", "is_task_folder", "task_document_data"]
