"""How a benchmark starts its subflows: a transport that asks again soon after a 503, and a starter
whose subflows Prefect records exactly as it records ``await flow(...)``."""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from prefect import flow, tags
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterParentFlowRunId
from prefect.settings import PREFECT_API_URL, temporary_settings
from prefect.states import State

from prefect_agentenv.flows.adapters.subflow_start import LockedDatabaseRetry, _direct_http, subflow_starter


class _Busy(ThreadingHTTPServer):
    """A loopback HTTP server that answers 503 to its first ``busy`` requests, then 200 with the body it got."""

    def __init__(self, busy: int, retry_after: str | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _BusyHandler)
        self.busy = busy
        self.retry_after = retry_after
        self.bodies: list[bytes] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/api/task_runs/"


class _BusyHandler(BaseHTTPRequestHandler):
    server: _Busy

    def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.bodies.append(body)
        locked = len(self.server.bodies) <= self.server.busy
        reply = b'{"exception_message": "Service Unavailable"}' if locked else body
        self.send_response(503 if locked else 201)
        self.send_header("Content-Type", "application/json")
        if locked and self.server.retry_after is not None:
            self.send_header("Retry-After", self.server.retry_after)
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def busy_server(busy: int, retry_after: str | None = None) -> Iterator[_Busy]:
    server = _Busy(busy, retry_after)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture
def twice_busy() -> Iterator[_Busy]:
    yield from busy_server(2)


@pytest.fixture
def always_busy() -> Iterator[_Busy]:
    yield from busy_server(1_000)


@pytest.fixture
def busy_for_a_while() -> Iterator[_Busy]:
    yield from busy_server(1, retry_after="3")


async def test_a_503_is_asked_again_with_the_same_body_until_the_server_takes_it(twice_busy: _Busy) -> None:
    transport = LockedDatabaseRetry(httpx.AsyncHTTPTransport(), delays=(0.01, 0.01, 0.01))
    async with httpx.AsyncClient(transport=transport) as client:
        response = await client.post(twice_busy.url, json={"name": "agent-task-1"})
    assert response.status_code == 201 and response.json() == {"name": "agent-task-1"}
    assert transport.retried == 2
    assert twice_busy.bodies == [b'{"name":"agent-task-1"}'] * 3


async def test_after_its_last_wait_the_transport_hands_the_503_to_the_client(always_busy: _Busy) -> None:
    transport = LockedDatabaseRetry(httpx.AsyncHTTPTransport(), delays=(0.01, 0.01))
    async with httpx.AsyncClient(transport=transport) as client:
        response = await client.post(always_busy.url, json={})
    assert response.status_code == 503  # Prefect's client then retries with its own back-off
    assert transport.retried == 2 and len(always_busy.bodies) == 3


async def test_a_503_that_says_how_long_to_wait_goes_straight_to_the_client(busy_for_a_while: _Busy) -> None:
    transport = LockedDatabaseRetry(httpx.AsyncHTTPTransport(), delays=(0.01, 0.01))
    async with httpx.AsyncClient(transport=transport) as client:
        response = await client.post(busy_for_a_while.url, json={})
    assert response.status_code == 503 and response.headers["Retry-After"] == "3"
    assert transport.retried == 0 and len(busy_for_a_while.bodies) == 1


@pytest.mark.parametrize(("url", "env", "direct"), [
    ("http://127.0.0.1:4200/api", {}, True),
    ("https://api.prefect.cloud/api/accounts/a/workspaces/w", {}, False),
    ("http://prefect.internal:4200/api", {"http_proxy": "http://proxy.internal:3128"}, False),
    ("http://127.0.0.1:4200/api", {"http_proxy": "http://proxy.internal:3128", "no_proxy": "127.0.0.1"}, True),
])
def test_only_plain_http_without_a_proxy_gets_the_quick_retries(
        url: str, env: dict[str, str], direct: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                 "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert _direct_http(httpx.URL(url)) is direct


async def test_over_https_the_benchmark_calls_its_subflows_the_ordinary_way() -> None:
    with temporary_settings(updates={PREFECT_API_URL: "https://prefect.example/api"}):
        async with subflow_starter() as starter:
            assert starter is None


@flow(name="subflow-start-child", flow_run_name="child {n}")
async def child(n: int, label: str = "plain") -> str:
    return f"{label}-{n}"


@flow(name="subflow-start-parent")
async def parent() -> tuple[State, State]:
    with tags("bench:unit"):
        ordinary = await child(n=1, return_state=True)
        async with subflow_starter() as starter:
            assert starter is not None  # the test harness serves its API over plain HTTP on loopback
            started = await starter.run(child, "child 2", n=2)
    return ordinary, started


@pytest.mark.usefixtures("prefect_harness")
async def test_a_started_subflow_is_recorded_as_prefect_records_an_ordinary_call() -> None:
    state = await parent(return_state=True)
    assert state.is_completed(), state.message
    ordinary, started = await state.aresult()
    assert await ordinary.aresult() == "plain-1" and await started.aresult() == "plain-2"
    parent_id = state.state_details.flow_run_id
    async with get_client() as client:
        runs = {r.name: r for r in await client.read_flow_runs(
            flow_run_filter=FlowRunFilter(parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[parent_id])))}
        assert sorted(runs) == ["child 1", "child 2"]  # both hang under the parent's run graph
        one, two = runs["child 1"], runs["child 2"]
        links = [await client.read_task_run(r.parent_task_run_id) for r in (one, two) if r.parent_task_run_id]
    assert two.flow_id == one.flow_id and two.state and two.state.is_completed()
    assert two.parameters == {"n": 2, "label": "plain"} and one.parameters == {"n": 1, "label": "plain"}
    assert set(two.tags) == set(one.tags) == {"bench:unit"}
    assert len(links) == 2 and all(t.flow_run_id == parent_id for t in links)
    assert links[0].task_key == links[1].task_key  # the same task stands for the subflow in the graph
    assert all(t.name.startswith("subflow-start-child-") for t in links)


@flow(name="subflow-start-parent-of-three")
async def parent_of_three() -> list[State]:
    async with subflow_starter() as starter:
        assert starter is not None
        return [await starter.run(child, f"child {n}", n=n, label="started") for n in (1, 2, 3)]


async def run_logging_requests(parent: Any, caplog: pytest.LogCaptureFixture) -> tuple[State, list[str]]:
    """Run the ``parent`` flow to completion; its state and every request it made (httpx's log lines)."""
    with caplog.at_level(logging.INFO, logger="httpx"):
        state: State = await parent(return_state=True)
    assert state.is_completed(), state.message
    return state, [r.getMessage() for r in caplog.records if r.name == "httpx"]


@pytest.mark.usefixtures("prefect_harness")
async def test_started_subflows_ask_for_their_flow_once_and_are_never_renamed(
        caplog: pytest.LogCaptureFixture) -> None:
    state, requests = await run_logging_requests(parent_of_three, caplog)
    assert [await s.aresult() for s in await state.aresult()] == ["started-1", "started-2", "started-3"]
    async with get_client() as client:
        runs = await client.read_flow_runs(flow_run_filter=FlowRunFilter(
            parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[state.state_details.flow_run_id])))
    assert sorted(r.name for r in runs) == ["child 1", "child 2", "child 3"]  # named when created
    flows_asked = [m for m in requests if re.search(r"POST \S+/api/flows/ ", m)]
    assert len(flows_asked) == 2  # the parent's (by Prefect's engine), then the child's, once for three runs
    for run in runs:
        patches = [m for m in requests if re.search(rf"PATCH \S+/api/flow_runs/{run.id} ", m)]
        assert len(patches) == 1  # the engine's record of the flow's version and retry policy; no rename
        assert run.flow_version == child.version and run.empirical_policy.retries == child.retries
        assert run.parameters == {"n": int(run.name[-1]), "label": "started"}
    assert child.flow_run_name == "child {n}"  # the flow itself keeps its name template


@flow(name="subflow-start-parent-of-four-at-once")
async def parent_of_four_at_once() -> list[State]:
    async with subflow_starter() as starter:
        assert starter is not None
        return list(await asyncio.gather(*(starter.run(child, f"child {n}", n=n) for n in range(4))))


@pytest.mark.usefixtures("prefect_harness")
async def test_subflows_started_together_make_their_two_writes_one_subflow_at_a_time(
        caplog: pytest.LogCaptureFixture) -> None:
    state, requests = await run_logging_requests(parent_of_four_at_once, caplog)
    assert sorted([await s.aresult() for s in await state.aresult()]) == [f"plain-{n}" for n in range(4)]
    writes = [m.group(1) for message in requests if (m := re.search(r"POST \S+/api/(task_runs|flow_runs)/ ", message))]
    # The parent's own flow run first, then each subflow's parent task run directly followed by its flow run.
    assert writes == ["flow_runs", *["task_runs", "flow_runs"] * 4]


@pytest.mark.usefixtures("prefect_harness", "agentenv_home")
async def test_without_the_starter_a_benchmark_runs_its_subflows_the_ordinary_way(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect_agentenv.flows.adapters import subflow_start
    from prefect_agentenv.flows.benchmark import benchmark

    monkeypatch.setattr(subflow_start, "_direct_http", lambda url: False)  # as over HTTPS or through a proxy
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump({"name": "Ordinary", "slug": "ordinary-starts", "concurrency": 2, "epochs": 2,
                                    "tasks": [{"id": "one", "steps": [{"id": "grade", "type": "test_score",
                                                                       "score": 1.0}]}]}))
    state = await benchmark(path=str(path), return_state=True)
    assert state.is_completed(), state.message
    async with get_client() as client:
        runs = await client.read_flow_runs(flow_run_filter=FlowRunFilter(
            parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[state.state_details.flow_run_id])))
    assert sorted(r.name for r in runs) == ["one · epoch 0", "one · epoch 1"]
    assert all(r.state and r.state.is_completed() for r in runs)
