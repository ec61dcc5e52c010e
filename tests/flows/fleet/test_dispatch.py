"""A flow run a benchmark creates for a work pool is never left running unobserved: when the wait is
cut short while the creation is still on its way (a task's timeout on a busy server), the flow run
that creation makes is cancelled once it exists."""

from __future__ import annotations

import asyncio

import pytest
from prefect import flow
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
from prefect.client.schemas.objects import FlowRun
from prefect.states import Scheduled

from prefect_agentenv.flows.adapters.fleet import create_flow_run

pytestmark = pytest.mark.usefixtures("prefect_harness")


@flow(name="fleet-create-probe")
def probe() -> None:
    """Only its flow runs are used: nothing runs it."""


async def test_a_flow_run_created_after_the_wait_for_it_timed_out_is_cancelled() -> None:
    made: list[FlowRun] = []

    async def slow_creation() -> FlowRun:
        await asyncio.sleep(0.5)  # the server answers late (its 503s retried)
        async with get_client() as client:
            made.append(await client.create_flow_run(probe, state=Scheduled()))
        return made[-1]

    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.1):
            await create_flow_run(slow_creation())

    (flow_run,) = made
    async with get_client() as client:
        (read,) = await client.read_flow_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run.id])))
    assert read.state and read.state.is_cancelled(), read.state  # no worker had it yet: Cancelled at once


async def test_a_creation_that_fails_after_the_wait_was_cut_short_leaves_the_timeout_as_it_was() -> None:
    async def failing_creation() -> FlowRun:
        await asyncio.sleep(0.3)
        raise RuntimeError("the server refused it")

    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.1):
            await create_flow_run(failing_creation())


async def test_a_creation_within_the_wait_returns_its_flow_run() -> None:
    async def creation() -> FlowRun:
        async with get_client() as client:
            return await client.create_flow_run(probe, state=Scheduled())

    flow_run = await create_flow_run(creation())
    async with get_client() as client:
        assert (await client.read_flow_run(flow_run.id)).state.is_scheduled()  # type: ignore[union-attr]
        await client.delete_flow_run(flow_run.id)
