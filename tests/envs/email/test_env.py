"""The email env end to end: seeded over the data plane, driven over MCP, read back with data/get."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx2
import pytest

from prefect_agentenv.exceptions import EnvRpcError
from prefect_agentenv.protocols.env import CLOCK_EXTENSION, TRIGGERS_EXTENSION, DataPart, EnvClient
from prefect_agentenv.protocols.mcp import McpClient, mcp_session

DANA = {"id": "m1", "from": "dana@example.com", "to": ["me@example.com"], "subject": "Q3 numbers",
        "body": "Could you send me the Q3 numbers before Friday?", "date": "2026-03-02T09:00:00Z"}
LUNCH = {"id": "m2", "from": "lee@example.com", "to": "me@example.com", "subject": "Lunch",
         "body": "Lunch on Thursday?", "date": "2026-03-02T11:00:00Z", "folder": "personal"}
MONDAY_10 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)


async def _session(env: EnvClient, mcp_http: httpx2.AsyncClient) -> Any:
    url = (await env.card()).mcp_url
    assert url is not None
    return mcp_session(url, http=mcp_http)


async def _call(session: McpClient, tool: str, **args: Any) -> Any:
    return (await session.call_tool(tool, args)).raise_for_error().data


async def test_the_card_declares_tools_data_plane_and_extensions(email: EnvClient) -> None:
    card = await email.card()

    assert card.tool_names == ["email_search", "email_read", "send", "list_sent", "list_folders"]
    assert card.has_data_plane
    triggers = card.extension(TRIGGERS_EXTENSION)
    assert triggers is not None and triggers.params["actions"] == ["deliver_email"]
    assert card.extension(CLOCK_EXTENSION) is not None


async def test_a_reply_sent_through_mcp_is_exported_and_dated_by_the_virtual_clock(
    email: EnvClient, mcp_http: httpx2.AsyncClient,
) -> None:
    await email.data_add([DataPart(data={"account": {"address": "sam@example.com"}, "emails": [DANA]})])
    await email.clock_set(MONDAY_10, frozen=True)

    async with await _session(email, mcp_http) as session:
        [hit] = (await _call(session, "email_search", query="q3 numbers"))["emails"]
        opened = await _call(session, "email_read", id=hit["id"])
        await _call(session, "send", to=opened["from"], subject="Re: Q3 numbers", body="Here they are.",
                    in_reply_to=opened["id"])

    state = await email.export_state()
    [reply] = state["sent"]
    assert reply["from"] == "sam@example.com" and reply["to"] == ["dana@example.com"]
    assert reply["in_reply_to"] == "m1" and reply["folder"] == "sent"
    assert reply["date"] == "2026-03-02T10:00:00Z"
    assert state["emails"][0]["read"] is True


async def test_search_matches_every_word_filters_by_folder_and_lists_newest_first(
    email: EnvClient, mcp_http: httpx2.AsyncClient,
) -> None:
    await email.data_add([DataPart(data={"emails": [DANA, LUNCH]})])

    async with await _session(email, mcp_http) as session:
        everything = await _call(session, "email_search")
        both_words = await _call(session, "email_search", query="LUNCH thursday")
        personal = await _call(session, "email_search", folder="personal")
        folders = await _call(session, "list_folders")

    assert [e["id"] for e in everything["emails"]] == ["m2", "m1"]
    assert "body" not in everything["emails"][0] and everything["emails"][0]["snippet"]
    assert [e["id"] for e in both_words["emails"]] == ["m2"]
    assert [e["id"] for e in personal["emails"]] == ["m2"]
    assert {"name": "inbox", "count": 1, "unread": 1} in folders["folders"]
    assert {"name": "personal", "count": 1, "unread": 1} in folders["folders"]


async def test_replying_to_an_unknown_email_is_a_tool_error_and_sends_nothing(
    email: EnvClient, mcp_http: httpx2.AsyncClient,
) -> None:
    async with await _session(email, mcp_http) as session:
        result = await session.call_tool("send", {"to": "x@example.com", "subject": "s", "body": "b",
                                                  "in_reply_to": "nope"})
        sent = await _call(session, "list_sent")

    assert result.is_error and "no email with id 'nope'" in result.text
    assert sent == {"emails": []}


async def test_a_delivery_trigger_fills_the_inbox_once_the_clock_reaches_it(
    email: EnvClient, mcp_http: httpx2.AsyncClient,
) -> None:
    await email.clock_set(MONDAY_10, frozen=True)
    await email.register_triggers([{"at": "2026-03-02T10:30:00Z", "action": "deliver_email",
                                    "data": {"from": "boss@example.com", "to": "me@example.com",
                                             "subject": "Urgent", "body": "Call me."}}])

    async with await _session(email, mcp_http) as session:
        before = await _call(session, "email_search", query="urgent")
        fired = await email.clock_advance(3600)
        after = await _call(session, "email_search", query="urgent")

    assert before == {"emails": []}
    assert [t.action for t in fired.fired] == ["deliver_email"]
    assert [e["date"] for e in after["emails"]] == ["2026-03-02T10:30:00Z"]


async def test_a_running_clock_delivers_a_due_email_before_the_next_tool_call(
    email: EnvClient, mcp_http: httpx2.AsyncClient,
) -> None:
    soon = datetime.now(UTC) + timedelta(milliseconds=300)
    await email.register_triggers([{"at": soon, "action": "deliver_email",
                                    "data": {"from": "a@example.com", "subject": "Ping"}}])
    await asyncio.sleep(0.4)

    async with await _session(email, mcp_http) as session:
        found = await _call(session, "email_search", query="ping")

    assert len(found["emails"]) == 1


async def test_the_export_loads_back_into_the_same_mailbox(email: EnvClient, mcp_http: httpx2.AsyncClient) -> None:
    await email.data_add([DataPart(data={"emails": [DANA, LUNCH]})])
    async with await _session(email, mcp_http) as session:
        await _call(session, "send", to="dana@example.com", subject="Hi", body="Hello")
    exported = await email.export_state()

    await email.data_reset()
    await email.data_add([DataPart(data=exported)])

    assert await email.export_state() == exported


async def test_a_seed_with_an_unknown_key_is_refused_as_invalid_params(email: EnvClient) -> None:
    with pytest.raises(EnvRpcError) as caught:
        await email.data_add([DataPart(data={"mails": [DANA]})])

    assert caught.value.code == -32602
    assert caught.value.data["errors"][0]["loc"] == ["mails"]
