"""What a benchmark and its shards (flows/agent_task_shard) tell each other: the task runs a shard is
given, and the entry it stores as each of them ends."""

from __future__ import annotations

from pydantic import BaseModel, Field

from prefect_agentenv.flows.adapters.task_parameter import TaskParameter

__all__ = ["ShardEntry", "ShardItem", "shard_entry_folder", "shard_entry_key"]


class ShardItem(BaseModel):
    """One task run of a shard: what ``agent_task`` is given, and its flow run's name and tags."""

    task: TaskParameter
    overrides: dict[str, str] = Field(default_factory=dict)
    name: str
    tags: list[str] = Field(default_factory=list)


class ShardEntry(BaseModel):
    """What the shard stores when one of its task runs ends: the task run's flow run, or why it has none."""

    flow_run_id: str | None = None
    error: str | None = None


def shard_entry_folder(shard_flow_run_id: str) -> str:
    """Where a shard's entries are kept among the store's run records."""
    return f"{shard_flow_run_id}/items"


def shard_entry_key(shard_flow_run_id: str, index: int) -> str:
    """The entry of the shard's ``index``-th task run."""
    return f"{shard_entry_folder(shard_flow_run_id)}/{index}.json"
