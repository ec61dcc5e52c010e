"""The env scaffold: JSON-RPC framing, the MCP-only variant, Host check, clock, triggers, stopping."""

from __future__ import annotations

import subprocess
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import httpx2
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

from prefect_agentenv.envs.server import TriggerBook, VirtualClock
from prefect_agentenv.exceptions import EnvRpcError, McpError, UnsupportedOperationError
from prefect_agentenv.protocols.env import DataPart, EnvClient, Trigger
from prefect_agentenv.protocols.jsonrpc import JsonRpcFault
from prefect_agentenv.protocols.mcp import mcp_session

MONDAY_10 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)


async def _post(http: httpx.AsyncClient, env: EnvClient, content: bytes) -> httpx.Response:
    return await http.post((await env.card()).url, content=content, headers={"content-type": "application/json"})


async def test_an_env_served_without_a_data_plane_lists_no_operations_and_knows_no_data_methods(
    env_processes: dict[str, Any], http: httpx.AsyncClient,
) -> None:
    env = EnvClient(env_processes["records_mcp_only"].base_url, http)
    card = await env.card()

    with pytest.raises(EnvRpcError) as caught:
        await env.call("data/get", endpoint=card.url)

    assert card.capabilities.operations == [] and not card.has_data_plane
    assert "search_patients" in card.tool_names
    assert caught.value.code == -32601
    assert (await env.clock_set(MONDAY_10)).time >= MONDAY_10


async def test_data_plane_calls_to_an_mcp_only_env_fail_at_once_with_a_clear_error(
    env_processes: dict[str, Any], http: httpx.AsyncClient,
) -> None:
    env = EnvClient(env_processes["records_mcp_only"].base_url, http)
    started = time.perf_counter()

    with pytest.raises(UnsupportedOperationError, match=r"'records' cannot do data/add: .* no data plane") as caught:
        await env.data_add([DataPart(data={"patients": []})])

    assert time.perf_counter() - started < 1.0
    assert caught.value.operation == "data/add"


async def test_a_body_that_is_not_json_is_a_parse_error_answered_with_http_200(
    email: EnvClient, http: httpx.AsyncClient,
) -> None:
    response = await _post(http, email, b"{not json")

    assert response.status_code == 200
    assert response.json() == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}


async def test_a_notification_is_performed_and_answered_with_no_body(email: EnvClient, http: httpx.AsyncClient) -> None:
    await email.clock_set(MONDAY_10, frozen=True)

    response = await _post(http, email, b'{"jsonrpc": "2.0", "method": "clock/advance", "params": {"seconds": 60}}')

    assert response.status_code == 204 and response.content == b""
    assert (await email.clock_get()).time == MONDAY_10 + timedelta(minutes=1)


@pytest.mark.parametrize(("body", "code"), [
    (b'{"jsonrpc": "2.0", "id": 7, "method": "clock/advance", "params": [60]}', -32602),
    (b'{"jsonrpc": "2.0", "id": 7, "params": {}}', -32600),
    (b'[{"jsonrpc": "2.0", "id": 7, "method": "clock/get"}]', -32600),
], ids=["positional params", "no method", "batch"])
async def test_malformed_requests_get_the_standard_error_codes(
    email: EnvClient, http: httpx.AsyncClient, body: bytes, code: int,
) -> None:
    response = await _post(http, email, body)

    assert response.status_code == 200 and response.json()["error"]["code"] == code


@pytest.mark.parametrize(("body", "loc", "kind"), [
    (b'{"jsonrpc": "2.0", "id": 8, "method": "clock/set", "params": {"time": "tomorrow"}}', ["time"], "datetime_from_date_parsing"),
    (b'{"jsonrpc": "2.0", "id": 8, "method": "clock/advance", "params": {"seconds": -5}}', ["seconds"], "greater_than_equal"),
    (b'{"jsonrpc": "2.0", "id": 8, "method": "clock/get", "params": {"verbose": true}}', ["verbose"], "extra_forbidden"),
    (b'{"jsonrpc": "2.0", "id": 8, "method": "triggers/register", "params": {"triggers": []}}', ["triggers"], "too_short"),
], ids=["clock/set time", "clock/advance negative", "clock/get extra member", "no triggers"])
async def test_params_are_checked_against_the_methods_own_model_and_refused_naming_the_member(
    email: EnvClient, http: httpx.AsyncClient, body: bytes, loc: list[str], kind: str,
) -> None:
    error = (await _post(http, email, body)).json()["error"]

    assert error["code"] == -32602 and error["message"].startswith("Invalid params for ")
    assert error["data"]["code"] == "invalid_params"
    assert [(e["loc"], e["type"]) for e in error["data"]["errors"]] == [(loc, kind)]


async def test_an_invalid_request_echoes_the_id_it_was_sent(email: EnvClient, http: httpx.AsyncClient) -> None:
    response = await _post(http, email, b'{"jsonrpc": "2.0", "id": 1.5, "method": ""}')

    assert response.json() == {"jsonrpc": "2.0", "id": 1.5, "error": {"code": -32600, "message": "Invalid Request"}}


async def test_every_tool_advertises_an_open_object_as_its_output(
    env_processes: dict[str, Any], mcp_http: httpx2.AsyncClient,
) -> None:
    """The tools' return annotations are their output schemas on the wire: this pins them."""
    for name in ("email", "records"):
        async with Client(streamable_http_client(f"{env_processes[name].base_url}/mcp", http_client=mcp_http)) as client:
            tools = (await client.list_tools()).tools

        assert tools and {t.name: t.output_schema for t in tools} == {
            t.name: {"additionalProperties": True, "title": f"{t.name}DictOutput", "type": "object"} for t in tools}


async def test_a_trigger_for_an_unknown_action_is_refused_naming_the_known_ones(email: EnvClient) -> None:
    with pytest.raises(EnvRpcError) as caught:
        await email.register_triggers([{"at": MONDAY_10, "action": "launch_rocket"}])

    assert caught.value.code == -32602
    assert caught.value.data == {"code": "unknown_action", "action": "launch_rocket", "known": ["deliver_email"]}
    assert await email.list_triggers() == []


async def test_data_reset_clears_triggers_and_returns_the_clock_to_running_real_time(email: EnvClient) -> None:
    await email.clock_set(MONDAY_10, frozen=True)
    await email.register_triggers([{"at": MONDAY_10 + timedelta(days=1), "action": "deliver_email",
                                    "data": {"from": "a@example.com"}}])

    await email.data_reset()

    clock = await email.clock_get()
    assert await email.list_triggers() == []
    assert not clock.frozen and abs(clock.time - datetime.now(UTC)) < timedelta(seconds=5)


async def test_the_mcp_endpoint_refuses_a_foreign_host_header(email: EnvClient, http: httpx.AsyncClient) -> None:
    mcp_url = (await email.card()).mcp_url
    assert mcp_url is not None

    response = await http.post(mcp_url, headers={"host": "attacker.example", "content-type": "application/json",
                                                 "accept": "application/json, text/event-stream"}, json={})

    assert response.status_code == 421


async def test_a_stopped_env_exits_promptly_and_its_open_session_fails_as_an_mcp_error(
    env_processes: dict[str, Any], mcp_http: httpx2.AsyncClient,
) -> None:
    disposable = env_processes["disposable"]
    # The legacy handshake opens the long-lived GET event stream that could hold a shutdown.
    with pytest.raises(McpError, match="could not reach"):
        async with mcp_session(f"{disposable.base_url}/mcp", http=mcp_http, mode="legacy") as session:
            await session.list_tools()
            started = time.monotonic()
            disposable.process.terminate()
            try:
                disposable.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pytest.fail("the env did not stop within 10 s of SIGTERM")
            stopped_after = time.monotonic() - started
            await session.list_tools()

    assert stopped_after < 5


# --- clock and triggers without a server -----------------------------------------------------


class FakeTime:
    """Wall and monotonic time the test moves by hand."""

    def __init__(self) -> None:
        self.wall = MONDAY_10
        self.mono = 100.0

    def sleep(self, seconds: float) -> None:
        self.wall += timedelta(seconds=seconds)
        self.mono += seconds


def test_a_running_clock_moves_with_the_wall_and_a_frozen_one_stands_still() -> None:
    fake = FakeTime()
    clock = VirtualClock(wall=lambda: fake.wall, monotonic=lambda: fake.mono)
    later = datetime(2030, 1, 1, tzinfo=UTC)

    clock.set(later)
    fake.sleep(30)
    running = clock.now()
    clock.set(later, frozen=True)
    fake.sleep(30)
    clock.advance(5)

    assert running == later + timedelta(seconds=30)
    assert clock.now() == later + timedelta(seconds=5) and clock.frozen


def test_due_triggers_fire_in_time_order_and_a_failing_action_fails_alone() -> None:
    performed: list[str] = []

    def note(data: dict[str, Any], at: datetime) -> None:
        if data.get("explode"):
            raise ValueError("kaboom")
        performed.append(f"{data['name']}@{at:%H:%M}")

    book = TriggerBook({"note": note})
    plan: list[tuple[int, dict[str, Any]]] = [
        (20, {"name": "late"}), (10, {"name": "early"}), (15, {"explode": True}), (90, {"name": "future"})]
    book.register([Trigger(at=MONDAY_10 + timedelta(minutes=m), action="note", data=d) for m, d in plan])

    fired = book.fire_due(MONDAY_10 + timedelta(minutes=30))

    assert performed == ["early@10:10", "late@10:20"]
    assert [(t.data.get("name"), t.status) for t in fired] == [("early", "fired"), (None, "failed"), ("late", "fired")]
    assert fired[1].error == "kaboom"
    assert [t.status for t in book.registered()] == ["fired", "fired", "failed", "pending"]


def test_triggers_with_an_id_already_registered_are_refused_as_a_whole() -> None:
    book = TriggerBook({"note": lambda data, at: None})
    book.register([Trigger(id="t1", at=MONDAY_10, action="note")])

    with pytest.raises(JsonRpcFault) as caught:
        book.register([Trigger(id="t2", at=MONDAY_10, action="note"), Trigger(id="t1", at=MONDAY_10, action="note")])

    assert caught.value.data == {"code": "duplicate_id"}
    assert [t.id for t in book.registered()] == ["t1"]
