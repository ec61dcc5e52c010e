"""The teardown registry: instances stop together, then sandboxes, then the run's shared clients."""

from __future__ import annotations

import asyncio

from prefect_agentenv.runtime.resources.teardown import TeardownRegistry


async def test_instances_are_stopped_together_then_sandboxes_then_clients_newest_first() -> None:
    registry = TeardownRegistry(per_entry_timeout=5)
    order: list[str] = []
    both_stopping = asyncio.Barrier(2)

    def stopper(label: str, *, wait_for_the_other: bool = False):  # noqa: ANN202
        async def stop() -> None:
            if wait_for_the_other:  # only returns once the other instance is stopping too
                await both_stopping.wait()
            order.append(label)
        return stop

    registry.add("http client", stopper("http client"), kind="client")
    registry.add("launcher cleanup", stopper("launcher cleanup"), kind="client")
    registry.add("env", stopper("env", wait_for_the_other=True), kind="env")
    registry.add("sandbox", stopper("sandbox"), kind="sandbox")
    registry.add("agent", stopper("agent", wait_for_the_other=True), kind="agent")

    records = await registry.stop_all()

    assert all(r.ok for r in records), records
    assert sorted(order[:2]) == ["agent", "env"]
    assert order[2:] == ["sandbox", "launcher cleanup", "http client"]


async def test_one_stop_that_hangs_does_not_keep_the_others_running() -> None:
    registry = TeardownRegistry(per_entry_timeout=0.2)
    stopped: list[str] = []

    async def hang() -> None:
        await asyncio.Event().wait()

    async def quick() -> None:
        stopped.append("quick")

    registry.add("stuck", hang, kind="agent")
    registry.add("quick", quick, kind="env")
    records = {r.label: r for r in await registry.stop_all()}

    assert stopped == ["quick"] and records["quick"].ok
    assert not records["stuck"].ok and "did not stop within" in (records["stuck"].error or "")
