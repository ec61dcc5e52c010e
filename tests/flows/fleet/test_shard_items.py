"""What a benchmark reads back from a shard's entries (flows/agent_task_shard → flows/fleet/shards),
in a real local store: each waiting task run settled by its own entry, a task run the shard could
not start failed with the shard's reason, entries not yet written left waiting, nothing read twice."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from prefect_agentenv.artifacts import LocalArtifactBackend
from prefect_agentenv.flows.fleet.shard_items import ShardEntry, ShardItem, shard_entry_key
from prefect_agentenv.flows.fleet.shards import Shards, ShardTaskRunError, _Shard, _Waiting

SHARD = "5f1c0a52-0000-4000-8000-000000000001"


async def test_each_task_run_is_settled_by_its_own_entry_as_it_appears(tmp_path: Path) -> None:
    store = LocalArtifactBackend(tmp_path / "store")
    shards = Shards(store, deployment="agent-task-shard/agent-task-shard", size=3, step_task_runs=True, tags=[])
    loop = asyncio.get_running_loop()
    shard = _Shard([_Waiting(ShardItem(task="t@1/a", name=f"a · {i}"), loop.create_future()) for i in range(3)])
    store.put_object(shard_entry_key(SHARD, 2), ShardEntry(flow_run_id="run-2").model_dump_json())
    store.put_object(shard_entry_key(SHARD, 0), ShardEntry(error="RuntimeError: no flow").model_dump_json())
    store.put_object(f"{SHARD}/items/notes.txt", "not an entry")

    await shards._settle(shard, SHARD)

    first, second, third = (w.future for w in shard.waiting)
    assert third.result() == ("run-2", SHARD)
    with pytest.raises(ShardTaskRunError, match="could not start it: RuntimeError: no flow"):
        first.result()
    assert not second.done()  # its task run is still running in the shard
    store.put_object(shard_entry_key(SHARD, 1), ShardEntry(flow_run_id="run-1").model_dump_json())
    await shards._settle(shard, SHARD)
    assert second.result() == ("run-1", SHARD) and third.result() == ("run-2", SHARD)
