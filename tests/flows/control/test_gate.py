"""The live gate that starts a benchmark's task runs: its concurrency and pause change while task runs wait."""

from __future__ import annotations

import asyncio

from prefect_agentenv.flows.control.gate import LiveGate


async def _hold(gate: LiveGate, name: str, started: list[str], release: asyncio.Event) -> None:
    async with gate.slot():
        started.append(name)
        await release.wait()


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_raised_the_waiters_that_fit_start_at_once_in_their_order_and_lowered_none_is_stopped() -> None:
    gate, started, release = LiveGate(1), [], asyncio.Event()
    tasks = [asyncio.create_task(_hold(gate, f"t{i}", started, release)) for i in range(6)]
    await _settle()
    assert started == ["t0"] and gate.waiting == 5
    gate.set(concurrency=4)
    await _settle()
    assert started == ["t0", "t1", "t2", "t3"] and gate.running == 4
    gate.set(concurrency=2)
    await _settle()
    assert gate.running == 4, "lowering the concurrency stops nothing"
    release.set()
    await asyncio.gather(*tasks)
    assert started == [f"t{i}" for i in range(6)] and gate.running == 0 and gate.waiting == 0


async def test_paused_nothing_starts_and_resumed_as_many_as_the_concurrency_allows() -> None:
    gate, started, release = LiveGate(2), [], asyncio.Event()
    gate.set(paused=True)
    tasks = [asyncio.create_task(_hold(gate, f"t{i}", started, release)) for i in range(3)]
    await _settle()
    assert started == [] and gate.waiting == 3
    gate.set(paused=False)
    await _settle()
    assert started == ["t0", "t1"]
    release.set()
    await asyncio.gather(*tasks)
    assert started == ["t0", "t1", "t2"]


async def test_a_waiter_cancelled_loses_no_slot_even_when_handed_one_as_it_was_cancelled() -> None:
    gate, started, release = LiveGate(1), [], asyncio.Event()
    first = asyncio.create_task(_hold(gate, "first", started, release))
    await _settle()
    second = asyncio.create_task(_hold(gate, "second", started, release))
    third = asyncio.create_task(_hold(gate, "third", started, release))
    await _settle()
    gate.set(concurrency=2)  # hands the free slot to "second" at once ...
    second.cancel()  # ... which is cancelled before it runs: the slot goes on to "third"
    await _settle()
    assert started == ["first", "third"] and gate.running == 2
    release.set()
    await asyncio.gather(first, second, third, return_exceptions=True)
    assert gate.running == 0 and gate.waiting == 0
