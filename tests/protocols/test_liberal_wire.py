"""Wire models read what real peers send: recorded cards and replies of the genuine SDKs, nulls,
unknown members, either case; and a reply we cannot use is named by peer, URL and field.

The recorded JSON files under ``tests/peers/recorded/`` were captured from the genuine peers in
``tests/peers/`` (the conformance tests fetch the same documents live).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from prefect_agentenv.exceptions import ProtocolError
from prefect_agentenv.protocols.a2a import A2ACard
from prefect_agentenv.protocols.a2a_reply import reply_from_result
from prefect_agentenv.protocols.agentenv_ext import MCP_CONFIG_EXTENSION, TRAJECTORY_EXTENSION, AgentEnvExtensions
from prefect_agentenv.protocols.env import DataPart, EnvCard, EnvClient, TextPart, parse_parts

RECORDED = Path(__file__).parents[1] / "peers" / "recorded"


def recorded(name: str) -> Any:
    return json.loads((RECORDED / name).read_text())


def test_the_sdk_env_card_with_a_null_required_flag_is_read() -> None:
    card = EnvCard.model_validate(recorded("sdk_env_card.json")).resolved("http://127.0.0.1:9/")

    stats = card.extension("urn:example:note-stats/v1")
    assert stats is not None and stats.required is False
    assert stats.params["endpoint"] == "http://127.0.0.1:9/agentenv/ext/stats"
    assert card.tool_names == ["add_note", "list_notes"]
    assert card.mcp_url == "http://127.0.0.1:9/mcp" and card.has_data_plane
    assert card.model_extra == {"preferredTransport": "JSONRPC"}  # unknown members kept, nulls dropped


def test_the_sdk_echo_card_with_null_extensions_and_no_data_plane_is_read() -> None:
    card = EnvCard.model_validate(recorded("sdk_echo_env_card.json"))

    assert card.capabilities.extensions == []
    assert not card.has_data_plane and not card.supports("data/get")
    assert card.tool_names == ["echo"]


def test_the_sdk_env_data_get_reply_is_read_as_parts() -> None:
    parts = parse_parts(recorded("sdk_env_data_get.json")["result"]["parts"])

    assert parts == [DataPart(data={"notes": [{"id": "a", "text": "x"}]})]


def test_a_snake_case_card_with_nulls_everywhere_optional_is_read() -> None:
    card = EnvCard.model_validate({
        "name": "odd", "description": None, "protocol_version": "1.0", "url": None,
        "additional_interfaces": [{"url": "/tools", "transport": "MCP", "headers": None}],
        "capabilities": {"tools": None, "operations": None, "extensions": [
            {"uri": "urn:x:y/v1", "description": None, "params": None, "required": None, "future": 1}]},
    })

    assert card.url == "/agentenv" and card.mcp_url == "/tools" and card.protocol_version == "1.0"
    assert card.capabilities.extensions[0].params == {} and card.has_data_plane


def test_parts_without_kind_are_read_by_the_member_they_carry() -> None:
    parts = parse_parts([{"text": "hi"}, {"data": {"a": 1}, "metadata": None},
                         {"file": {"bytes": "aGk=", "mime_type": "text/plain", "uri": None}}])

    assert isinstance(parts[0], TextPart) and isinstance(parts[1], DataPart)
    assert parts[2].file.content() == b"hi"  # type: ignore[union-attr]


async def test_a_card_we_cannot_use_names_the_peer_the_url_and_the_field() -> None:
    def serve(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"name": "notes", "capabilities": {"extensions": [{"description": "no uri"}]}})

    async with httpx.AsyncClient(transport=httpx.MockTransport(serve)) as http:
        env = EnvClient("http://env.test/", http, name="notes")
        with pytest.raises(ProtocolError) as caught:
            await env.card()

    message = str(caught.value)
    assert "env 'notes'" in message and "http://env.test/.well-known/agent-env.json" in message
    assert "capabilities.extensions[0].uri" in message
    assert caught.value.url == "http://env.test/.well-known/agent-env.json"


def test_an_agent_card_in_snake_case_with_nulls_is_read() -> None:
    card = A2ACard.from_raw({
        "name": "plain", "description": None, "capabilities": {"extensions": None, "streaming": None},
        "supported_interfaces": [{"url": "/rpc", "protocol_binding": "JSONRPC", "protocol_version": "1.0"}],
    }, base_url="http://agent.test/", card_url="http://agent.test/.well-known/agent-card.json")

    assert card.interface() == ("http://agent.test/rpc", "1.0")
    assert card.extensions == []
    assert AgentEnvExtensions(card, httpx.AsyncClient()).extensions == {}


def test_recorded_agent_cards_are_read_with_their_extensions() -> None:
    sdk = recorded("sdk_agent_card.json")
    card = A2ACard.from_raw(sdk, base_url="http://agent.test/", card_url="http://agent.test/.well-known/agent-card.json")
    extensions = AgentEnvExtensions(card, httpx.AsyncClient())

    assert card.interface() == ("http://agent.test/a2a", "0.3")
    assert extensions.has(MCP_CONFIG_EXTENSION, "add") and extensions.has(TRAJECTORY_EXTENSION, "get")
    assert "urn:agentenv:staging/v1" in extensions.extensions
    assert extensions.filter_agent_config({"temperature": 0.5, "system_prompt": "x"}) == ({"temperature": 0.5},
                                                                                          ["system_prompt"])
    plain = A2ACard.from_raw(recorded("plain_agent_card.json"), base_url="http://agent.test/",
                             card_url="http://agent.test/.well-known/agent-card.json")
    assert plain.interface()[1] == "1.0" and plain.extensions == []


def test_a_reply_in_snake_case_is_read() -> None:
    reply = reply_from_result({"kind": "message", "message_id": "m", "task_id": "t", "context_id": "c",
                               "parts": [{"kind": "text", "text": "done"}]})

    assert (reply.text, reply.task_id, reply.context_id) == ("done", "t", "c")


def rpc_peer(answer: Any) -> EnvClient:
    """An env with a legacy card (no operations listed) whose JSON-RPC endpoint answers ``answer(request)``."""
    def serve(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(200, json={"name": "odd"})
        return httpx.Response(200, json=answer(json.loads(request.content)))

    return EnvClient("http://env.test/", httpx.AsyncClient(transport=httpx.MockTransport(serve)))


async def test_a_json_rpc_answer_echoing_the_id_as_a_string_is_accepted() -> None:
    env = rpc_peer(lambda req: {"jsonrpc": "2.0", "id": str(req["id"]), "result": {"parts": [{"text": "hi"}]}})

    assert await env.data_get() == [TextPart(text="hi")]


async def test_a_json_rpc_error_with_a_null_message_is_still_reported_as_the_env_error() -> None:
    env = rpc_peer(lambda req: {"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32000, "message": None,
                                                                             "data": {"code": "locked"}}})

    with pytest.raises(ProtocolError, match=r"env 'odd': data/reset failed on .*\[-32000\] \(locked\)") as caught:
        await env.data_reset()
    assert getattr(caught.value, "error_code", None) == "locked"


async def test_a_card_that_is_not_json_is_named_as_such() -> None:
    def serve(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text="<html>hello</html>")

    async with httpx.AsyncClient(transport=httpx.MockTransport(serve)) as http:
        with pytest.raises(ProtocolError, match="env 'web' at http://env.test/.* something other than JSON"):
            await EnvClient("http://env.test/", http, name="web").card()


def listing_agent(listing: Any) -> AgentEnvExtensions:
    """The recorded SDK agent, whose mcp-config ``list`` (GET) answers ``listing``."""
    def serve(request: httpx.Request) -> httpx.Response:
        assert (request.method, request.url.path) == ("GET", "/ext/mcp-config")
        return httpx.Response(200, json=listing)

    card = A2ACard.from_raw(recorded("sdk_agent_card.json"), base_url="http://agent.test/",
                            card_url="http://agent.test/.well-known/agent-card.json")
    return AgentEnvExtensions(card, httpx.AsyncClient(transport=httpx.MockTransport(serve)))


async def test_an_mcp_server_listing_in_the_sdk_map_form_is_read_as_typed_entries() -> None:
    listed = await listing_agent({"mcp_servers": {"email": {
        "url": "http://env.test/mcp", "headers": ["Authorization"], "transport": "http", "description": None}}}
    ).list_mcp_servers()

    assert [(s.name, s.url, s.headers) for s in listed] == [("email", "http://env.test/mcp", ["Authorization"])]
    assert listed[0].model_extra == {"transport": "http"}  # unknown members kept, nulls dropped
    assert listed[0].to_wire() == {"name": "email", "url": "http://env.test/mcp", "headers": ["Authorization"],
                                   "transport": "http"}


async def test_an_mcp_server_entry_we_cannot_read_is_named_by_agent_and_field() -> None:
    agent = listing_agent({"mcp_servers": [{"name": "email", "url": {"host": "env.test"}}]})

    with pytest.raises(ProtocolError, match=r"agent .* sent an MCP server list we cannot use: field url"):
        await agent.list_mcp_servers()
