"""Starting a benchmark's subflows without Prefect's two-second back-off on a busy SQLite server.

A subflow begins with two writes: its parent task run (the node the parent's run graph draws)
and its flow run. A Prefect server on SQLite (its default, and the ephemeral server's) runs each
in a transaction that reads before it writes. When another write commits in between, as it does
all the time while other task runs record their states, SQLite refuses the write at once
("database is locked") and the server answers 503. Prefect's client waits 2 s, then 4 s, before
it asks again; a benchmark's concurrent subflows start one after another, seconds apart
(benchmarks/README.md, round 8). Asked again a few milliseconds later, the server says yes.

:class:`SubflowStarter` makes those two writes itself, through a client whose transport asks
again after 10 to 400 ms, then hands the flow run to Prefect's engine, which runs it exactly as
``await flow(...)`` would: same parent task run, same flow run, same tags, same parameters. A
fleet's ``arun_deployment`` makes the same two writes and takes the same client.
Prefect has no setting for its first back-off, so this is the one place that keeps a client of
its own. It applies to plain-HTTP servers reached without a proxy (a local or self-hosted
server); for anything else the benchmark calls the flow the ordinary way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any, cast
from urllib.request import getproxies, proxy_bypass

import httpx
from prefect import Flow
from prefect.client.orchestration import PrefectClient, get_client
from prefect.context import FlowRunContext, TagsContext
from prefect.flow_engine import run_flow_async
from prefect.states import Pending, State
from prefect.tasks import Task
from prefect.utilities.callables import get_call_parameters

__all__ = ["LockedDatabaseRetry", "SubflowStarter", "subflow_starter"]

logger = logging.getLogger("prefect_agentenv.benchmark")

RETRY_DELAYS_S: tuple[float, ...] = (0.01, 0.02, 0.05, 0.1, 0.2, 0.4)
"""How long to wait before asking again after each 503; after the last, Prefect's own retries take over."""


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
        tags = TagsContext.get().current_tags
        # Prefect keys a subflow's parent task run by a counter, or, where call order is not stable,
        # by a UUID; concurrent task runs are not ordered, so a UUID it is.
        key = uuid.uuid4().hex
        task_run = await self._client.create_task_run(
            task=self._tracking_task(flow), flow_run_id=parent.flow_run.id, dynamic_key=key,
            name=f"{flow.name}-{key}", state=Pending(), task_inputs={p: [] for p in parameters}, extra_tags=tags)
        flow_run = await self._client.create_flow_run(
            flow, name=name, parameters=flow.serialize_parameters(parameters), parent_task_run_id=task_run.id,
            state=Pending(), tags=tags)
        # No await between creating the flow run and handing it over: from here on the engine owns
        # it, states, crash and cancellation included, as it owns the runs it creates itself.
        return cast(State, await run_flow_async(flow, flow_run=flow_run, parameters=parameters, return_type="state"))

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
