"""Following flow runs a benchmark dispatched to a work pool: wait for their end, cancel them."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Coroutine
from typing import Any
from uuid import UUID

from prefect.client.orchestration import get_client
from prefect.client.schemas.objects import FlowRun, State
from prefect.states import Cancelled, Cancelling

logger = logging.getLogger("prefect_agentenv.benchmark")

POLL_SECONDS = (0.5, 1.0, 2.0)
"""Waits between state reads: short at first (quick tasks), then every 2 s."""


async def create_flow_run(create: Coroutine[Any, Any, FlowRun]) -> FlowRun:
    """Await ``create`` (an ``arun_deployment``), and if the wait is cut short, cancel what it created.

    Creating a flow run is a few writes, retried while a busy server answers 503, and on a loaded
    machine that can outlast a task's timeout. Cancelled half-way, the creation may still reach the
    server, and the flow run would then run on its worker with nobody waiting for it. So the creation
    goes on to its end, and the flow run it made is cancelled at once.
    """
    creating = asyncio.ensure_future(create)
    try:
        return await asyncio.shield(creating)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):  # it failed: there is nothing to cancel
            flow_run = await asyncio.shield(creating)
            await asyncio.shield(cancel_flow_run(flow_run.id))
        raise


async def wait_for_flow_run(flow_run_id: UUID) -> None:
    """Return once the flow run is in a final state (Completed, Failed, Crashed, Cancelled)."""
    async with get_client() as client:
        for attempt in itertools.count():
            flow_run = await client.read_flow_run(flow_run_id)
            if flow_run.state is not None and flow_run.state.is_final():
                return
            await asyncio.sleep(POLL_SECONDS[min(attempt, len(POLL_SECONDS) - 1)])


async def cancel_flow_run(flow_run_id: UUID) -> None:
    """Ask the flow run's worker to cancel it (best effort: a run already final stays as it is)."""
    try:
        async with get_client() as client:
            flow_run = await client.read_flow_run(flow_run_id)
            if flow_run.state is not None and flow_run.state.is_final():
                return
            message = "the benchmark stopped waiting for it (task timeout or benchmark cancelled)"
            # A run no worker has picked up yet never starts (Cancelled); one a worker has (Pending,
            # Running) is stopped by that worker, which watches for Cancelling.
            waiting = flow_run.state is not None and flow_run.state.is_scheduled()
            state: State[None] = Cancelled(message=message) if waiting else Cancelling(message=message)
            await client.set_flow_run_state(flow_run_id, state, force=True)
    except Exception as exc:  # the benchmark's own result must not depend on this courtesy
        logger.warning("could not cancel flow run %s: %s", flow_run_id, exc)
