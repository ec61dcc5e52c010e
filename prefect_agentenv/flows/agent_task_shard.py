"""The ``agent-task-shard`` flow: several task runs of a benchmark in one flow run on a work pool.

A process worker starts a Python process for every flow run it picks up, and that process imports
Prefect and this package before its first step: seconds of CPU per task run, which capped a
two-worker nightly at 0.12 task runs a second (benchmarks/README.md). A benchmark that dispatches
``tasks_per_flow_run`` task runs at a time sends them here as one flow run instead; each runs as an
``agent_task`` subflow of it, concurrently, so the UI shows every task run with its step graph as
before, one level down, and the process is paid once per shard.

As each task run ends, the shard stores a small entry naming its flow run (``shard_entry_key``); the
benchmark, which waits on the shard, reads the task run's report from there (each ``agent_task``
stores its own report), so results arrive one by one, not when the whole shard is done.
"""

from __future__ import annotations

import asyncio
import logging

from prefect import get_run_logger, tags
from prefect.context import FlowRunContext
from prefect.states import Completed, Failed, State

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.flows.adapters.json_flow import json_parameter_flow
from prefect_agentenv.flows.adapters.subflow_start import SubflowStarter, subflow_starter
from prefect_agentenv.flows.agent_task import start_agent_task
from prefect_agentenv.flows.control.follow import following, run_of
from prefect_agentenv.flows.fleet.shard_items import ShardEntry, ShardItem, shard_entry_key
from prefect_agentenv.flows.task_runner import current_flow_run_id

__all__ = ["agent_task_shard"]

logger = logging.getLogger("prefect_agentenv.benchmark")


def _shard_run_name() -> str:
    ctx = FlowRunContext.get()
    items = (ctx.flow_run.parameters.get("items") if ctx and ctx.flow_run else None) or []
    return f"shard of {len(items)} task run{'' if len(items) == 1 else 's'}"


@json_parameter_flow(name="agent-task-shard", flow_run_name=_shard_run_name, persist_result=False, log_prints=True,
                     validate_parameters=True)
async def agent_task_shard(items: list[ShardItem], step_task_runs: bool = True) -> State:
    """Run several task documents at once, each as an ``agent-task`` subflow of this flow run.

    Args:
        items: The task runs: each a `task` (as `agent-task` takes it), its `overrides`, and the `name`
            and `tags` of its flow run.
        step_task_runs: Record each step as a Prefect task run (as `agent-task`'s parameter).
    """
    shard_id = current_flow_run_id()
    if shard_id is None:  # called as a plain function: there is no flow run to key the entries by
        return Failed(message="agent-task-shard runs as a flow run")
    ctx = FlowRunContext.get()
    own_tags = list(ctx.flow_run.tags) if ctx and ctx.flow_run else []
    async with subflow_starter() as starter, following(run_of(own_tags)):  # its benchmark's hold (control)
        ended = await asyncio.gather(*(_run_item(shard_id, i, item, own_tags, step_task_runs, starter)
                                       for i, item in enumerate(items)))
    failed = sum(not ok for ok in ended)
    get_run_logger().info("shard: %d task run(s), %d could not start", len(items), failed)
    return Completed(message=f"{len(items)} task run(s)" + (f", {failed} could not start" if failed else ""))


async def _run_item(shard_id: str, index: int, item: ShardItem, own_tags: list[str], step_task_runs: bool,
                    starter: SubflowStarter | None) -> bool:
    """One task run of the shard, then its entry; False when it ended without a flow run of its own."""
    entry = ShardEntry()
    try:
        with tags(*own_tags, *item.tags):
            state = await start_agent_task(item.name, starter, task=item.task, overrides=item.overrides,
                                           step_task_runs=step_task_runs)
        details = state.state_details
        entry.flow_run_id = str(details.flow_run_id) if details and details.flow_run_id else None
    except Exception as exc:  # one task run that could not start costs that task run only
        logger.warning("task run %s of the shard could not run: %s", item.name, exc)
        entry.error = f"{type(exc).__name__}: {exc}"
    await asyncio.shield(asyncio.to_thread(_store_entry, shard_id, index, entry))
    return entry.flow_run_id is not None


def _store_entry(shard_id: str, index: int, entry: ShardEntry) -> None:
    with get_artifact_store() as store:
        store.put_object(shard_entry_key(shard_id, index), entry.model_dump_json())
