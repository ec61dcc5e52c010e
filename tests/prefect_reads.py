"""Reads of what a finished run left in the Prefect API, waiting out Prefect's own delivery lag.

A flow call returns before the API holds everything about it: task run states travel as events that
the server records in the background, and log lines go out in batches. A test that reads straight
away sees a Running task run or no logs on a busy machine. These helpers poll, with a deadline,
until what they read is settled; they never hide a wrong value, only a late one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from uuid import UUID

from prefect.client.orchestration import PrefectClient, get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId, LogFilter
from prefect.client.schemas.objects import Log, TaskRun
from prefect.logging.handlers import APILogHandler

DEADLINE_SECONDS = 30.0


async def settled_task_runs(flow_run_ids: Sequence[UUID], client: PrefectClient | None = None,
                            deadline: float = DEADLINE_SECONDS, at_least: int = 1,
                            until: Callable[[TaskRun], bool] | None = None) -> list[TaskRun]:
    """The task runs of these flow runs, once there are ``at_least`` of them and every one is in a final
    state and meets ``until`` (or the deadline passed). Task runs themselves are recorded from events, so
    they can lag too; a retried task run passes through Failed, which is final, so a test that expects the
    retry to have succeeded says so with ``until``."""
    async def read(c: PrefectClient) -> list[TaskRun]:
        return await c.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=list(flow_run_ids))))

    give_up = time.monotonic() + deadline
    while True:
        if client is None:
            async with get_client() as own:
                runs = await read(own)
        else:
            runs = await read(client)
        settled = len(runs) >= at_least and all(
            r.state and r.state.is_final() and (until is None or until(r)) for r in runs)
        if settled or time.monotonic() > give_up:
            return runs
        await asyncio.sleep(0.2)


async def flushed_logs(log_filter: LogFilter, client: PrefectClient | None = None,
                       deadline: float = DEADLINE_SECONDS) -> list[Log]:
    """The log lines matching the filter, after flushing this process's batch and waiting for the first line."""
    await APILogHandler.aflush()
    give_up = time.monotonic() + deadline
    while True:
        if client is None:
            async with get_client() as own:
                logs = await own.read_logs(log_filter=log_filter)
        else:
            logs = await client.read_logs(log_filter=log_filter)
        if logs or time.monotonic() > give_up:
            return logs
        await asyncio.sleep(0.2)



def summary_steps(markdown: object) -> list[tuple[str, str]]:
    """Each step of a task run's summary artifact as (id, state), in the order of its steps table."""
    lines = str(markdown).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| step | type | state |"))
    rows = []
    for line in lines[start + 2:]:  # past the header and its |---| line
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows.append((cells[0], cells[2]))
    return rows
