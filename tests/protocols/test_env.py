"""EnvClient against a real env process, and against scripted answers for the failure paths."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from prefect_agentenv.exceptions import EnvRpcError, ProtocolError, UnsupportedOperationError
from prefect_agentenv.protocols.env import (
    CLOCK_EXTENSION,
    DataPart,
    EnvClient,
    FilePart,
    TextPart,
)

DANA = {"id": "m1", "from": "dana@example.com", "to": ["me@example.com"], "subject": "Q3 numbers",
        "body": "Could you send me the Q3 numbers?", "date": "2026-03-02T09:00:00Z"}


@pytest.fixture
async def email(protocol_servers: dict[str, Any], http: httpx.AsyncClient) -> EnvClient:
    env = EnvClient(protocol_servers["email"].base_url, http)
    await env.data_reset()
    return env


async def test_the_card_is_typed_and_its_relative_urls_are_resolved_against_the_base(email: EnvClient) -> None:
    card = await email.card()

    assert card.name == "email"
    assert card.url == email.base_url + "agentenv"
    assert card.mcp_url == email.base_url + "mcp"
    assert "send" in card.tool_names
    assert card.capabilities.operations == ["data/reset", "data/add", "data/get"]
    clock = card.extension(CLOCK_EXTENSION)
    assert clock is not None and clock.params["endpoint"] == email.base_url + "agentenv"
    assert await email.supports("data/get") and await email.supports(CLOCK_EXTENSION)


async def test_data_and_json_file_parts_are_loaded_and_exported_as_one_data_part(email: EnvClient) -> None:
    second = {**DANA, "id": "m2", "subject": "Lunch?"}
    await email.data_add([
        DataPart(data={"emails": [DANA]}),
        FilePart.from_bytes(json.dumps({"emails": [second]}).encode(), name="inbox.json",
                            mime_type="application/json"),
    ])

    parts = await email.data_get()

    assert len(parts) == 1 and isinstance(parts[0], DataPart)
    assert [e["id"] for e in parts[0].data["emails"]] == ["m1", "m2"]
    assert (await email.export_state())["sent"] == []


async def test_dict_parts_are_validated_before_they_are_sent(email: EnvClient) -> None:
    with pytest.raises(ProtocolError, match="malformed parts"):
        await email.data_add([{"kind": "data"}])


async def test_an_unknown_method_is_a_typed_error_with_code_32601(email: EnvClient) -> None:
    with pytest.raises(EnvRpcError) as caught:
        await email.call("data/explode")

    assert caught.value.code == -32601
    assert caught.value.method == "data/explode"
    assert "data/get" in caught.value.data["available"]


async def test_bad_params_are_a_typed_error_with_code_32602(email: EnvClient) -> None:
    with pytest.raises(EnvRpcError) as caught:
        await email.data_add([TextPart(text="not json at all")])

    assert caught.value.code == -32602
    assert caught.value.error_code == "invalid_params"


async def test_an_env_refusal_is_code_32000_with_the_env_own_error_name(email: EnvClient) -> None:
    await email.data_add([DataPart(data={"emails": [DANA]})])

    with pytest.raises(EnvRpcError) as caught:
        await email.data_add([DataPart(data={"emails": [DANA]})])

    assert caught.value.code == -32000
    assert caught.value.error_code == "duplicate_id"


async def test_moving_the_clock_past_a_trigger_fires_it_once(email: EnvClient) -> None:
    start = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
    await email.clock_set(start, frozen=True)
    [stored] = await email.register_triggers([
        {"at": "2026-03-02T09:00:00Z", "action": "deliver_email", "data": {**DANA, "date": None}},
    ])
    assert stored.status == "pending" and stored.id

    early = await email.clock_advance(1800)
    late = await email.clock_advance(3600)

    assert early.fired == [] and early.time == datetime(2026, 3, 2, 8, 30, tzinfo=UTC)
    assert [t.id for t in late.fired] == [stored.id] and late.fired[0].status == "fired"
    assert (await email.clock_get()).frozen
    assert [t.status for t in await email.list_triggers()] == ["fired"]
    [delivered] = (await email.export_state())["emails"]
    assert delivered["date"] == "2026-03-02T09:00:00Z"


# --- scripted peers --------------------------------------------------------------------------

CARD = {"name": "scripted", "url": "/rpc", "additionalInterfaces": [{"url": "/mcp", "transport": "mcp"}]}


def scripted(card: dict[str, Any], rpc: Callable[[httpx.Request], httpx.Response]) -> tuple[EnvClient, list[str]]:
    """An EnvClient whose peer serves ``card`` and answers POSTs with ``rpc``; records paths hit."""
    hits: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        hits.append(f"{request.method} {request.url.path}")
        if request.method == "GET":
            return httpx.Response(200, json=card)
        return rpc(request)

    http = httpx.AsyncClient(transport=httpx.MockTransport(handle))
    return EnvClient("http://env.test/base/", http), hits


def answer(result: Any) -> Callable[[httpx.Request], httpx.Response]:
    def rpc(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": json.loads(request.content)["id"], "result": result})
    return rpc


async def test_data_plane_calls_on_a_card_without_operations_never_reach_the_wire() -> None:
    env, hits = scripted({**CARD, "capabilities": {"operations": []}}, answer({}))

    for call in (env.data_reset(), env.data_add([DataPart(data={})]), env.data_get()):
        with pytest.raises(UnsupportedOperationError):
            await call

    assert hits == ["GET /base/.well-known/agent-env.json"]


async def test_a_plain_mcp_server_without_a_card_has_no_data_plane() -> None:
    def no_card(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404)

    env = EnvClient("http://env.test/", httpx.AsyncClient(transport=httpx.MockTransport(no_card)))

    with pytest.raises(UnsupportedOperationError, match="no env card") as caught:
        await env.data_reset()

    assert caught.value.operation == "data/reset"
    assert not await env.supports("data/get")


async def test_a_legacy_card_without_operations_offers_the_whole_data_plane() -> None:
    env, hits = scripted(CARD, answer({"parts": [{"kind": "text", "text": "hi"}]}))

    assert await env.data_get() == [TextPart(text="hi")]
    assert hits[-1] == "POST /rpc"


async def test_an_env_without_the_clock_extension_refuses_clock_calls() -> None:
    env, _ = scripted(CARD, answer({}))

    with pytest.raises(UnsupportedOperationError) as caught:
        await env.clock_advance(60)

    assert caught.value.operation == CLOCK_EXTENSION


async def test_a_non_200_answer_is_a_protocol_error_carrying_the_status() -> None:
    env, _ = scripted(CARD, lambda request: httpx.Response(503, text="busy"))

    with pytest.raises(ProtocolError) as caught:
        await env.data_reset()

    assert caught.value.code == 503 and not isinstance(caught.value, EnvRpcError)


async def test_an_answer_that_is_not_json_rpc_is_a_protocol_error() -> None:
    env, _ = scripted(CARD, lambda request: httpx.Response(200, text="<html>"))

    with pytest.raises(ProtocolError, match="not JSON-RPC"):
        await env.data_reset()


async def test_an_answer_for_another_request_id_is_a_protocol_error() -> None:
    env, _ = scripted(CARD, lambda request: httpx.Response(200, json={"jsonrpc": "2.0", "id": -1, "result": {}}))

    with pytest.raises(ProtocolError, match="id -1"):
        await env.data_reset()


def _httpx_errors(base: type[httpx.HTTPError] = httpx.HTTPError) -> list[type[httpx.HTTPError]]:
    found: list[type[httpx.HTTPError]] = []
    for sub in base.__subclasses__():
        found += [sub, *_httpx_errors(sub)]
    return found


@pytest.mark.parametrize("error_type", _httpx_errors(), ids=lambda t: t.__name__)
async def test_every_httpx_error_becomes_a_protocol_error(error_type: type[httpx.HTTPError]) -> None:
    def fail(request: httpx.Request) -> httpx.Response:
        if issubclass(error_type, httpx.HTTPStatusError):
            raise error_type("boom", request=request, response=httpx.Response(500))
        raise error_type("boom", request=request)  # type: ignore[call-arg]

    env = EnvClient("http://env.test/", httpx.AsyncClient(transport=httpx.MockTransport(fail)))

    with pytest.raises(ProtocolError) as caught:
        await env.card()

    assert isinstance(caught.value.__cause__, error_type)
