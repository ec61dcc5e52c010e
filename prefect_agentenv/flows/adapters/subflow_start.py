"""Starting a benchmark's subflows without Prefect's two-second back-off on a busy SQLite server.

A subflow begins with two writes: its parent task run (the node the parent's run graph draws)
and its flow run. A Prefect server on SQLite (its default, and the ephemeral server's) runs each
in a transaction that reads before it writes. When another write commits in between, as it does
all the time while other task runs record their states, SQLite refuses the write at once
("database is locked") and the server answers 503. Prefect's client waits 2 s, then 4 s, before
it asks again; a benchmark's concurrent subflows start one after another, seconds apart
(the benchmarks README's section on a benchmark of 8 task runs). Asked again a few milliseconds later, the server says yes.

:class:`SubflowStarter` makes those two writes itself, through a client whose transport asks
again after 10 ms, then after longer waits up to 400 ms each, for about 3.5 s in all, before
Prefect's own retries take over; then it hands the flow run to Prefect's engine, which runs it
exactly as ``await flow(...)`` would: same parent task run, same flow run, same tags, same
parameters. A fleet's ``arun_deployment`` makes the same two writes and takes the same client.
The starter makes one subflow's two writes at a time: started together, the subflows of a
benchmark's first wave refused each other, round after round, until one of them fell back to
Prefect's two-second wait (the benchmarks README's section on a benchmark of 8 task runs); one after another, each takes a
few milliseconds.

Two round trips of an ordinary subflow buy nothing here, and the starter leaves them out: Prefect's
client asks for the flow's id (``POST /flows/``) before each flow run it creates, and its engine
renames each subflow run (a ``PATCH``) to the name its ``flow_run_name`` gives. The starter asks
for the id once per flow and creates the flow run under its final name, so the engine is handed
the flow without a ``flow_run_name`` and has nothing to rename.
Prefect has no setting for its first back-off, so this is the one place that keeps a client of
its own. It applies to plain-HTTP servers reached without a proxy (a local or self-hosted
server); for anything else the benchmark calls the flow the ordinary way.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import random
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any, cast
from urllib.request import getproxies, proxy_bypass

import httpx
from prefect import Flow
from prefect.client.orchestration import PrefectClient, get_client
from prefect.client.schemas.actions import FlowRunCreate
from prefect.client.schemas.objects import FlowRun, FlowRunPolicy
from prefect.context import FlowRunContext, TagsContext
from prefect.flow_engine import run_flow_async
from prefect.states import Pending, State, to_state_create
from prefect.tasks import Task
from prefect.utilities.callables import get_call_parameters

__all__ = ["LockedDatabaseRetry", "SubflowStarter", "subflow_starter"]

logger = logging.getLogger("prefect_agentenv.benchmark")

RETRY_DELAYS_S: tuple[float, ...] = (0.01, 0.02, 0.05, 0.1, 0.2, *[0.4] * 8)
"""How long to wait before asking again after each 503 (about 3.5 s in all, against Prefect's first
wait of 2 s); after the last, Prefect's own retries take over."""


class LockedDatabaseRetry(httpx.AsyncBaseTransport):
    """An HTTP transport that answers a 503 by asking again after a short wait, a few times.

    The server answers 503 only for errors it rolled back and calls retryable, which Prefect's
    client retries anyway, with any method; this only asks sooner. A 503 that says how long to
    wait (``Retry-After``) goes straight to the client, which waits that long.
    """

    def __init__(self, inner: httpx.AsyncBaseTransport, delays: Sequence[float] = RETRY_DELAYS_S) -> None:
        self._inner = inner
        self._delays = tuple(delays)
        self.retried = 0
        """503s answered by asking again (logged at debug level when the benchmark ends)."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        for delay in self._delays:
            response = await self._inner.handle_async_request(request)
            if response.status_code != httpx.codes.SERVICE_UNAVAILABLE or "retry-after" in response.headers:
                return response  # a wait asked for by name is Prefect's client's to honour
            await response.aclose()
            self.retried += 1
            # Jittered, so subflows refused together do not all ask again at the same moment.
            await asyncio.sleep(delay * random.uniform(0.5, 1.5))
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def _direct_http(url: httpx.URL) -> bool:
    """Plain HTTP with no proxy in the way: the transport above speaks to it as Prefect's would."""
    if url.scheme != "http":
        return False
    return "http" not in getproxies() or bool(proxy_bypass(url.host))


class SubflowStarter:
    """Creates a subflow's parent task run and flow run, retrying a locked database quickly, then
    runs the flow run with Prefect's engine in the calling flow run's context."""

    def __init__(self, client: PrefectClient) -> None:
        self._client = client
        self._tracking: dict[str, Task[Any, Any]] = {}
        self._flow_ids: dict[str, uuid.UUID] = {}
        self._unnamed: dict[int, tuple[Flow[Any, Any], Flow[Any, Any]]] = {}
        self._creating = asyncio.Lock()

    @property
    def client(self) -> PrefectClient:
        """The quick-retrying client, for other calls that create linked runs (``arun_deployment`` takes one)."""
        return self._client

    async def run(self, flow: Flow[Any, Any], name: str, /, **kwargs: Any) -> State:
        """``await flow(**kwargs, return_state=True)``, named ``name``, as a subflow of the current flow run."""
        parent = FlowRunContext.get()
        if parent is None or parent.flow_run is None:
            raise RuntimeError("a subflow starts from inside a flow run")
        parameters = get_call_parameters(flow.fn, (), kwargs)
        async with self._creating:  # one subflow's writes at a time: started together, they refuse each other
            flow_run = await self._create_runs(flow, name, parent.flow_run.id, parameters)
        # No suspension between creating the flow run and handing it over (a lock's release does not
        # wait): from here on the engine owns it, states, crash and cancellation included, as it owns
        # the runs it creates itself.
        return cast(State, await run_flow_async(self._without_run_name(flow), flow_run=flow_run,
                                                parameters=parameters, return_type="state"))

    async def _create_runs(self, flow: Flow[Any, Any], name: str, parent_flow_run_id: uuid.UUID,
                           parameters: dict[str, Any]) -> FlowRun:
        """The subflow's parent task run, then its flow run, as Prefect's engine creates them."""
        tags = TagsContext.get().current_tags
        # Prefect keys a subflow's parent task run by a counter, or, where call order is not stable,
        # by a UUID; concurrent task runs are not ordered, so a UUID it is.
        key = uuid.uuid4().hex
        task_run = await self._client.create_task_run(
            task=self._tracking_task(flow), flow_run_id=parent_flow_run_id, dynamic_key=key,
            name=f"{flow.name}-{key}", state=Pending(), task_inputs={p: [] for p in parameters}, extra_tags=tags)
        flow_id = await self._flow_id(flow)
        return await self._create_flow_run(flow, flow_id, name, flow.serialize_parameters(parameters),
                                           parent_task_run_id=task_run.id, tags=tags)

    async def _flow_id(self, flow: Flow[Any, Any]) -> uuid.UUID:
        """The flow's id on the server, asked for once (Prefect's client asks before every flow run)."""
        if flow.name not in self._flow_ids:
            self._flow_ids[flow.name] = await self._client.create_flow(flow)
        return self._flow_ids[flow.name]

    async def _create_flow_run(self, flow: Flow[Any, Any], flow_id: uuid.UUID, name: str,
                               parameters: dict[str, Any], *, parent_task_run_id: uuid.UUID,
                               tags: set[str]) -> FlowRun:
        """The flow run ``PrefectClient.create_flow_run`` creates, field for field, for a flow whose id is known."""
        create = FlowRunCreate(
            flow_id=flow_id, flow_version=flow.version, name=name, parameters=parameters, context={},
            tags=list(tags), parent_task_run_id=parent_task_run_id, state=to_state_create(Pending()),
            empirical_policy=FlowRunPolicy(retries=flow.retries, retry_delay=int(flow.retry_delay_seconds or 0)))
        response = await self._client.request("POST", "/flow_runs/",
                                              json=create.model_dump(mode="json", exclude_unset=True))
        flow_run = FlowRun.model_validate(response.json())
        flow_run.parameters = parameters  # as Prefect's client does: the objects sent, not their JSON echo
        return flow_run

    def _without_run_name(self, flow: Flow[Any, Any]) -> Flow[Any, Any]:
        """``flow`` without its ``flow_run_name``: the run was created under its name, so the engine
        has nothing to rename (a copy, not ``with_options``, which keeps the name it is not given)."""
        if flow.flow_run_name is None:
            return flow
        known = self._unnamed.get(id(flow))
        if known is None or known[0] is not flow:
            unnamed = copy.copy(flow)
            unnamed.flow_run_name = None
            known = self._unnamed[id(flow)] = (flow, unnamed)
        return known[1]

    def _tracking_task(self, flow: Flow[Any, Any]) -> Task[Any, Any]:
        """The task that stands for the subflow in its parent's run graph, as Prefect's engine makes it."""
        if flow.name not in self._tracking:
            self._tracking[flow.name] = Task(name=flow.name, fn=flow.fn, version=flow.version)
        return self._tracking[flow.name]


@contextlib.asynccontextmanager
async def subflow_starter() -> AsyncIterator[SubflowStarter | None]:
    """A :class:`SubflowStarter` for this flow run's API, or ``None`` where the ordinary call is the way."""
    transport = LockedDatabaseRetry(httpx.AsyncHTTPTransport(retries=3, limits=httpx.Limits(
        max_connections=16, max_keepalive_connections=8, keepalive_expiry=25)))
    client = get_client(httpx_settings={"transport": transport})
    if not _direct_http(client.api_url):
        await transport.aclose()
        yield None
        return
    try:
        async with client:
            yield SubflowStarter(client)
    finally:
        logger.debug("subflow starts: %d answer(s) of 503 asked again", transport.retried)
