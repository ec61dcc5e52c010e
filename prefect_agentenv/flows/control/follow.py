"""A benchmark's hold of its agents' model calls, honoured by its task runs on a work pool's workers.

``control pause --now`` holds the agents of a benchmark's task runs at their next model call. A
fleet's task runs run in a worker's process, with a model gateway of their own that the
benchmark's hold does not reach. So the benchmark tags each flow run it sends to a work pool with
its run id (:data:`RUN_TAG`), and the task run there follows the run's status Variable (what the
benchmark applies, written at once when a setting changes): while it says ``hold_model_calls``,
this process's gateways hold their agents' next calls, as the benchmark's own do. A run that has
finished, or whose status is gone, holds nothing. The time held is added to the task run's time
limit by the benchmark, which keeps that deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import AsyncIterator, Iterable

from prefect.client.orchestration import get_client

from prefect_agentenv.flows.control.channel import ControlChannel
from prefect_agentenv.gateway.hold import ModelHold
from prefect_agentenv.run_services.model_door import ModelTraffic, model_traffic

logger = logging.getLogger("prefect_agentenv.benchmark")

RUN_TAG = "agentenv-run:"
"""The tag that names the benchmark run a fleet's flow run belongs to: ``agentenv-run:<run id>``."""
FOLLOW_SECONDS = 1.0
"""How often a fleet's task run reads its benchmark's status Variable."""


def run_tag(run_id: str) -> str:
    return RUN_TAG + run_id


def run_of(tags: Iterable[str]) -> str | None:
    """The benchmark run named by a flow run's tags, if one is."""
    return next((t.removeprefix(RUN_TAG) for t in tags if t.startswith(RUN_TAG)), None)


@contextlib.asynccontextmanager
async def following(run_id: str | None) -> AsyncIterator[None]:
    """For the block, this process's gateways hold their agents' calls while benchmark ``run_id``
    holds them (nothing when ``None``, or when a hold is bound already: a shard's subflows)."""
    current = model_traffic.get()
    if not run_id or (current is not None and current.hold is not None):
        yield
        return
    hold = ModelHold()
    token = model_traffic.set(dataclasses.replace(current or ModelTraffic(), hold=hold))
    watcher = asyncio.create_task(_follow(run_id, hold), name=f"follow benchmark run {run_id}")
    try:
        yield
    finally:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
        hold.release()
        model_traffic.reset(token)


async def _follow(run_id: str, hold: ModelHold) -> None:
    """Hold or release as the run's status says, once every ``FOLLOW_SECONDS``; a failed read changes nothing."""
    async with get_client() as client:
        channel = ControlChannel(client)
        while True:
            try:
                status = await channel.read_status(run_id)
            except Exception as exc:  # the API away for a moment: the next read tries again
                logger.debug("reading benchmark run %s's status failed: %s", run_id, exc)
            else:
                if status is not None and status.state == "running" and status.applied.get("hold_model_calls"):
                    if not hold.held:
                        logger.info("benchmark run %s holds its agents' next model calls", run_id)
                    hold.hold()
                elif hold.held:
                    logger.info("benchmark run %s released its agents' model calls (held %.1fs)", run_id,
                                hold.release())
            await asyncio.sleep(FOLLOW_SECONDS)
