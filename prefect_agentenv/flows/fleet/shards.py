"""Dispatching a benchmark's task runs to a work pool several at a time (``tasks_per_flow_run``).

Each task run the benchmark starts joins the shard being gathered; the shard goes to the
``agent-task-shard`` deployment as one flow run once it holds ``size`` task runs, once the
benchmark has no other task run to send (it says how many are coming: :meth:`Shards.expect`), or
once no task run has joined it for ``linger_s`` (a retry waiting out its back-off, a task run that
never reached dispatch). The benchmark's concurrency bounds how many task runs are in flight, so
with a concurrency of 32 and shards of 16 two shards run at a time, and a new one fills as the task
runs of the earlier ones end: it goes when the last of them ends, a wave at a time. Sent as soon as
a few had joined, shards came to one or two task runs each, a process each again: a task run ends
every second or two, and each one's slot is what lets the next one join.

While a shard runs, its entries (flows/agent_task_shard) are read from the store as they appear
and each waiting task run gets its report then. A shard that ends (however it ends) settles every
task run it has no entry for as one without a report. Cancelling a waiting task run (its timeout,
a cancelled benchmark) cancels the shard's flow run once none of its task runs is still waited for;
until then the cancelled one runs on in the shard and its result is not used.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from dataclasses import dataclass, field
from uuid import UUID

from prefect.client.orchestration import PrefectClient, get_client
from prefect.deployments import arun_deployment

from prefect_agentenv.artifacts import ArtifactBackend
from prefect_agentenv.exceptions import AgentEnvError, ArtifactError
from prefect_agentenv.flows.adapters.fleet import POLL_SECONDS, cancel_flow_run, create_flow_run
from prefect_agentenv.flows.fleet.shard_items import ShardEntry, ShardItem, shard_entry_folder

__all__ = ["ShardTaskRunError", "Shards"]

logger = logging.getLogger("prefect_agentenv.benchmark")

LINGER_SECONDS = 10.0
"""How long a shard that is not full, with task runs still to come, waits for another to join it."""


class ShardTaskRunError(AgentEnvError, RuntimeError):
    """A task run its shard could not start (the shard's entry says why): the benchmark's infrastructure
    failure, retried as its policy says."""


@dataclass
class _Waiting:
    item: ShardItem
    future: asyncio.Future[tuple[str | None, str | None]]
    """Settled with the task run's flow run id (``None``: it has none) and the shard's flow run id."""


@dataclass
class _Shard:
    waiting: list[_Waiting] = field(default_factory=list)
    flow_run_id: UUID | None = None


class Shards:
    """Gathers task runs into shards and runs each shard as a flow run of ``deployment``."""

    def __init__(self, store: ArtifactBackend, *, deployment: str, size: int, step_task_runs: bool,
                 tags: list[str], linger_s: float = LINGER_SECONDS) -> None:
        self.store, self.deployment, self.size = store, deployment, size
        self.step_task_runs, self.tags, self.linger_s = step_task_runs, tags, linger_s
        self.client: PrefectClient | None = None
        """The client that creates the shards' flow runs (the benchmark's quick-retrying one), if any."""
        self._gathering = _Shard()
        self._coming = 0
        """Task runs the benchmark still means to send (its :meth:`expect` less those that came)."""
        self._timer: asyncio.TimerHandle | None = None
        self._running: set[asyncio.Task[None]] = set()

    def expect(self, count: int) -> None:
        """``count`` more task runs are coming (the benchmark's pending ones at its start, each retry)."""
        self._coming += count

    async def run(self, item: ShardItem) -> tuple[str | None, str | None]:
        """Run ``item`` in a shard; its flow run id (``None``: it has none) and its shard's flow run id."""
        loop = asyncio.get_running_loop()
        waiting = _Waiting(item, loop.create_future())
        self._gathering.waiting.append(waiting)
        self._coming = max(self._coming - 1, 0)
        if len(self._gathering.waiting) >= self.size or self._coming == 0:
            self._send()
        else:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = loop.call_later(self.linger_s, self._send)
        return await waiting.future

    async def aclose(self) -> None:
        """Send what is gathered, and wait for the shards still running (cancelled with their waiters)."""
        if self._gathering.waiting:
            self._send()
        if self._running:
            await asyncio.gather(*self._running, return_exceptions=True)

    def _send(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        shard, self._gathering = self._gathering, _Shard()
        shard.waiting = [w for w in shard.waiting if not w.future.done()]  # cancelled while gathered
        if not shard.waiting:
            return
        task = asyncio.get_running_loop().create_task(self._follow(shard), name="benchmark shard")
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def _follow(self, shard: _Shard) -> None:
        """Start the shard's flow run, then settle each waiting task run as its entry appears."""
        try:
            # An item's task is sent as given (a reference, or the document's JSON as its snapshot keeps it):
            # the shard validates it where it runs, so its dump is not checked against the model here.
            items = [w.item.model_dump(mode="json", warnings=False) for w in shard.waiting]
            flow_run = await create_flow_run(arun_deployment(
                self.deployment, parameters={"items": items, "step_task_runs": self.step_task_runs},
                tags=self.tags, timeout=0, as_subflow=True, client=self.client))
        except Exception as exc:  # the shard's task runs could not run: each of them says so
            for w in shard.waiting:
                if not w.future.done():
                    w.future.set_exception(exc)
            return
        shard.flow_run_id = flow_run.id
        try:
            await self._settle_as_entries_appear(shard)
        except BaseException as exc:  # following it failed (the API, the store): its waiters learn why
            for w in shard.waiting:
                if w.future.done():
                    continue
                if isinstance(exc, Exception):
                    w.future.set_exception(exc)
                else:
                    w.future.cancel()
            await asyncio.shield(cancel_flow_run(flow_run.id))
            if not isinstance(exc, Exception):
                raise

    async def _settle_as_entries_appear(self, shard: _Shard) -> None:
        assert shard.flow_run_id is not None
        shard_id = str(shard.flow_run_id)
        async with get_client() as client:
            for attempt in itertools.count():
                await self._settle(shard, shard_id)
                if all(w.future.done() for w in shard.waiting):
                    if any(w.future.cancelled() for w in shard.waiting):
                        await asyncio.shield(cancel_flow_run(shard.flow_run_id))
                    return
                flow_run = await client.read_flow_run(shard.flow_run_id)
                if flow_run.state is not None and flow_run.state.is_final():
                    await self._settle(shard, shard_id)  # entries stored before the state was read
                    for w in shard.waiting:
                        if not w.future.done():
                            w.future.set_result((None, shard_id))
                    return
                await asyncio.sleep(POLL_SECONDS[min(attempt, len(POLL_SECONDS) - 1)])

    async def _settle(self, shard: _Shard, shard_id: str) -> None:
        """Settle the waiting task runs whose entries the shard has stored."""
        wanted = {i for i, w in enumerate(shard.waiting) if not w.future.done()}
        entries = await asyncio.to_thread(self._entries, shard_id, wanted)
        for index, entry in entries.items():
            future = shard.waiting[index].future
            if future.done():
                continue
            if entry.flow_run_id is None and entry.error:
                future.set_exception(ShardTaskRunError(f"shard {shard_id} could not start it: {entry.error}"))
            else:
                future.set_result((entry.flow_run_id, shard_id))

    def _entries(self, shard_id: str, wanted: set[int]) -> dict[int, ShardEntry]:
        """The stored entries among ``wanted`` (the list of the shard's entries, then each new one)."""
        found: dict[int, ShardEntry] = {}
        try:
            keys = self.store.list_objects(shard_entry_folder(shard_id))
        except ArtifactError:
            return found
        for key in keys:
            index = key.rsplit("/", 1)[-1].removesuffix(".json")
            if not index.isdigit() or int(index) not in wanted:
                continue
            try:
                found[int(index)] = ShardEntry.model_validate_json(self.store.get_object(key))
            except (ArtifactError, ValueError) as exc:  # written as it was read: read again next time
                logger.debug("shard entry %s is not readable yet: %s", key, exc)
        return found
