"""McpClient against the email env (mcp 2.x) and a hand-written mcp 1.x-style server.

The hand-written server stays because it logs the JSON-RPC methods it receives, which is how these
tests see the version negotiation; a genuine mcp 1.x server (FastMCP, from the peers' venv) is
exercised end to end in ``tests/conformance/``."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import httpx2
import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from prefect_agentenv.exceptions import McpError, McpToolError
from prefect_agentenv.protocols.env import DataPart, EnvClient
from prefect_agentenv.protocols.mcp import mcp_session

DANA = {"id": "m1", "from": "dana@example.com", "to": ["me@example.com"], "subject": "Q3 numbers",
        "body": "Could you send me the Q3 numbers?"}


@pytest.fixture
async def email(protocol_servers: dict[str, Any], http: httpx.AsyncClient) -> EnvClient:
    env = EnvClient(protocol_servers["email"].base_url, http)
    await env.data_reset()
    await env.data_add([DataPart(data={"emails": [DANA]})])
    return env


async def _mcp_url(env: EnvClient) -> str:
    url = (await env.card()).mcp_url
    assert url is not None
    return url


async def test_tools_are_listed_and_called_on_an_mcp_2x_env(email: EnvClient, mcp_http: httpx2.AsyncClient) -> None:
    async with mcp_session(await _mcp_url(email), http=mcp_http) as session:
        tools = {tool.name: tool for tool in await session.list_tools()}
        found = (await session.call_tool("email_search", {"query": "q3"})).raise_for_error()
        sent = (await session.call_tool("send", {"to": "dana@example.com", "subject": "Re: Q3 numbers",
                                                  "body": "Attached.", "in_reply_to": "m1"})).raise_for_error()

    assert session.protocol_version in MODERN_PROTOCOL_VERSIONS
    assert {"email_search", "email_read", "send", "list_sent", "list_folders"} <= set(tools)
    assert "query" in tools["email_search"].input_schema["properties"]
    assert [e["id"] for e in found.data["emails"]] == ["m1"]
    assert (await email.export_state())["sent"][0]["id"] == sent.data["id"]


async def test_a_failing_tool_comes_back_flagged_and_raise_for_error_raises_it(
    email: EnvClient, mcp_http: httpx2.AsyncClient,
) -> None:
    async with mcp_session(await _mcp_url(email), http=mcp_http) as session:
        result = await session.call_tool("email_read", {"id": "nope"})

    assert result.is_error and "no email with id 'nope'" in result.text
    with pytest.raises(McpToolError) as caught:
        result.raise_for_error()
    assert caught.value.tool == "email_read"


async def test_a_1x_server_is_reached_through_the_initialize_handshake(
    protocol_servers: dict[str, Any], mcp_http: httpx2.AsyncClient,
) -> None:
    legacy = protocol_servers["legacy"].base_url

    async with mcp_session(f"{legacy}/mcp", http=mcp_http) as session:
        tools = [tool.name for tool in await session.list_tools()]
        echoed = (await session.call_tool("echo", {"text": "hello"})).raise_for_error()
        failed = await session.call_tool("fail")

    assert session.protocol_version == "2025-03-26"
    assert session.server_name == "legacy-1x"
    assert tools == ["echo", "fail"]
    assert echoed.text == "hello" and echoed.structured is None
    assert failed.is_error and failed.text == "this tool always fails"
    methods = [entry["method"] for entry in httpx.get(f"{legacy}/_log").json()]
    assert methods[:2] == ["server/discover", "initialize"]


async def test_a_1x_style_client_is_served_by_the_env(email: EnvClient, mcp_http: httpx2.AsyncClient) -> None:
    async with mcp_session(await _mcp_url(email), http=mcp_http, mode="legacy") as session:
        found = (await session.call_tool("email_search", {"query": "dana"})).raise_for_error()

    assert session.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS
    assert [e["id"] for e in found.data["emails"]] == ["m1"]


def _sse_message(response: httpx.Response) -> dict[str, Any]:
    if response.headers["content-type"].startswith("application/json"):
        return dict(response.json())
    data = [line[len("data:"):].strip() for line in response.text.splitlines() if line.startswith("data:")]
    return dict(json.loads(next(d for d in data if d)))


async def test_a_raw_2025_03_26_handshake_is_answered_by_the_env(email: EnvClient, http: httpx.AsyncClient) -> None:
    url = await _mcp_url(email)
    headers = {"accept": "application/json, text/event-stream"}
    init = await http.post(url, headers=headers, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                   "clientInfo": {"name": "old-client", "version": "1.0"}}})
    session = {**headers, "mcp-session-id": init.headers["mcp-session-id"], "mcp-protocol-version": "2025-03-26"}
    await http.post(url, headers=session, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    listed = await http.post(url, headers=session, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    await http.delete(url, headers=session)

    assert _sse_message(init)["result"]["protocolVersion"] == "2025-03-26"
    assert "send" in [tool["name"] for tool in _sse_message(listed)["result"]["tools"]]


async def test_a_shared_http_client_outlives_the_sessions_that_use_it(
    email: EnvClient, mcp_http: httpx2.AsyncClient,
) -> None:
    url = await _mcp_url(email)
    for _ in range(2):
        async with mcp_session(url, http=mcp_http) as session:
            await session.list_tools()

    assert not mcp_http.is_closed


async def test_an_unreachable_server_is_an_mcp_error_at_once(mcp_http: httpx2.AsyncClient) -> None:
    started = time.perf_counter()

    with pytest.raises(McpError, match="could not reach") as caught:
        async with mcp_session("http://127.0.0.1:9/mcp", http=mcp_http):
            pass

    assert time.perf_counter() - started < 2.0
    assert isinstance(caught.value.__cause__, BaseExceptionGroup | httpx2.HTTPError)


async def test_an_endpoint_that_is_not_mcp_is_an_mcp_error(email: EnvClient, mcp_http: httpx2.AsyncClient) -> None:
    with pytest.raises(McpError) as caught:
        async with mcp_session((await email.card()).url, http=mcp_http):
            pass

    assert caught.value.code == -32601


async def test_the_caller_own_exception_leaves_the_session_unchanged(
    email: EnvClient, mcp_http: httpx2.AsyncClient,
) -> None:
    with pytest.raises(LookupError, match="mine"):
        async with mcp_session(await _mcp_url(email), http=mcp_http) as session:
            await session.list_tools()
            raise LookupError("mine")


def _httpx2_errors(base: type[httpx2.HTTPError] = httpx2.HTTPError) -> list[type[httpx2.HTTPError]]:
    found: list[type[httpx2.HTTPError]] = []
    for sub in base.__subclasses__():
        found += [sub, *_httpx2_errors(sub)]
    return found


@pytest.mark.parametrize("error_type", _httpx2_errors(), ids=lambda t: t.__name__)
async def test_every_httpx2_error_becomes_an_mcp_error(error_type: type[httpx2.HTTPError]) -> None:
    def fail(request: httpx2.Request) -> httpx2.Response:
        if issubclass(error_type, httpx2.HTTPStatusError):
            raise error_type("boom", request=request, response=httpx2.Response(500))
        raise error_type("boom", request=request)  # type: ignore[call-arg]

    async with httpx2.AsyncClient(transport=httpx2.MockTransport(fail)) as failing:
        with pytest.raises(McpError) as caught:
            async with mcp_session("http://mcp.test/mcp", http=failing):
                pass

    assert not isinstance(caught.value, McpToolError)
