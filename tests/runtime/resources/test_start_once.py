"""One start shared by every caller: begun once, awaited by all, begun again after a failure."""

from __future__ import annotations

import asyncio

import pytest

from prefect_agentenv.runtime.resources.start_once import StartOnce


async def test_callers_share_one_start_and_a_failed_one_is_begun_again() -> None:
    once: StartOnce[str] = StartOnce()
    begun: list[int] = []
    gate = asyncio.Event()

    async def start() -> str:
        begun.append(1)
        await gate.wait()
        if len(begun) == 1:
            raise ConnectionError("refused")
        return "up"

    waiters = [asyncio.ensure_future(once.get(start)) for _ in range(3)]
    await asyncio.sleep(0)
    gate.set()
    results = await asyncio.gather(*waiters, return_exceptions=True)
    assert [type(r) for r in results] == [ConnectionError] * 3 and len(begun) == 1
    assert once.task is None  # forgotten before its waiters heard of it
    assert [await once.get(start) for _ in range(2)] == ["up", "up"] and len(begun) == 2


async def test_a_cancelled_waiter_leaves_the_start_going_for_the_others() -> None:
    once: StartOnce[str] = StartOnce()
    gate = asyncio.Event()

    async def start() -> str:
        await gate.wait()
        return "up"

    first = asyncio.ensure_future(once.get(start))
    second = asyncio.ensure_future(once.get(start))
    await asyncio.sleep(0)
    first.cancel()
    gate.set()
    assert await second == "up"
    with pytest.raises(asyncio.CancelledError):
        await first


async def test_a_start_cancelled_before_it_first_ran_is_forgotten() -> None:
    once: StartOnce[str] = StartOnce()

    async def start() -> str:
        return "up"

    waiter = asyncio.ensure_future(once.get(start))
    await asyncio.sleep(0)  # the waiter made the start; it has not run yet
    task = once.task
    assert task is not None and not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert once.task is None
    assert await once.get(start) == "up"
