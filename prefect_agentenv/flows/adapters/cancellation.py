"""Prefect cancellation of a run that no worker supervises (a CLI run, ``serve``).

``prefect flow-run cancel`` (or the UI's Cancel button) only moves the flow run to CANCELLING;
a worker then kills its process, but a CLI run has no worker. So the flow watches its own
state and, on CANCELLING, asks the run to stop: steps in flight are cancelled, teardown runs,
the report is written, and the flow returns a Cancelled state.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from uuid import UUID

from prefect.client.orchestration import get_client
from prefect.client.schemas.objects import StateType
from prefect.settings import get_current_settings

from prefect_agentenv.runtime.resources.stop import StopRequest
from prefect_agentenv.settings import get_settings

logger = logging.getLogger("prefect_agentenv.cancellation")


@asynccontextmanager
async def watch_cancellation(stop: StopRequest, flow_run_id: str | None) -> AsyncIterator[None]:
    """While the block runs, poll the flow run's state and request a stop on CANCELLING.

    Only against a configured API (``PREFECT_API_URL``): a temporary in-process server has no
    one else who could cancel the run.
    """
    interval = get_settings().cancel_poll_seconds
    if flow_run_id is None or interval <= 0 or not get_current_settings().api.url:
        yield
        return
    watcher = asyncio.create_task(_watch(stop, UUID(flow_run_id), interval), name="agentenv-cancel-watch")
    try:
        yield
    finally:
        watcher.cancel()
        with suppress(asyncio.CancelledError):
            await watcher


async def _watch(stop: StopRequest, flow_run_id: UUID, interval: float) -> None:
    async with get_client() as client:
        while stop.reason is None:
            await asyncio.sleep(interval)
            try:
                flow_run = await client.read_flow_run(flow_run_id)
            except Exception as exc:  # a transient API fault must not end the run; look again later
                logger.debug("could not read the state of flow run %s: %s", flow_run_id, exc)
                continue
            if flow_run.state is not None and flow_run.state.type is StateType.CANCELLING:
                stop.request("cancelled")
