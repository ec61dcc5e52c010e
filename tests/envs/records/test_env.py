"""The records env end to end: a prior authorization worked through MCP, checked in data/get."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx2
import pytest

from prefect_agentenv.exceptions import EnvRpcError
from prefect_agentenv.protocols.env import DataPart, EnvClient
from prefect_agentenv.protocols.mcp import McpClient, mcp_session

SEED: dict[str, Any] = {
    "patients": [
        {"patient_id": "P1", "name": "Ana Diaz", "birth_date": "1965-03-15", "mrn": "MRN-001",
         "insurance": {"payer": "Acme Health", "member_id": "A123"}},
        {"patient_id": "P2", "name": "Ana Berg", "birth_date": "1990-01-01"},
    ],
    "referrals": [{"referral_id": "R1", "patient_id": "P1", "to_specialty": "radiology",
                   "reason": "low back pain", "diagnosis_codes": ["M54.5"], "cpt_code": "72148"}],
    "inbox": [{"document_id": "DOC-0001", "title": "Referral for Ana Diaz", "content": "MRI lumbar spine",
               "patient_id": "P1", "referral_id": "R1", "received_at": "2026-03-02T08:00:00Z"}],
}
MONDAY_10 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)


async def _session(env: EnvClient, mcp_http: httpx2.AsyncClient) -> Any:
    url = (await env.card()).mcp_url
    assert url is not None
    return mcp_session(url, http=mcp_http)


async def _call(session: McpClient, tool: str, **args: Any) -> Any:
    return (await session.call_tool(tool, args)).raise_for_error().data


async def test_a_prior_auth_submitted_through_mcp_is_exported_with_its_status_and_codes(
    records: EnvClient, mcp_http: httpx2.AsyncClient,
) -> None:
    await records.data_add([DataPart(data=SEED)])
    await records.clock_set(MONDAY_10, frozen=True)

    async with await _session(records, mcp_http) as session:
        [patient] = (await _call(session, "search_patients", query="ana", birth_date="1965-03-15"))["patients"]
        referral = await _call(session, "read_referral", referral_id="R1")
        created = await _call(session, "create_request", patient_id=patient["patient_id"],
                              referral_id="R1", cpt_code=referral["cpt_code"],
                              icd10_codes=referral["diagnosis_codes"])
        await _call(session, "update_request", request_id=created["request_id"], status="submitted")

    [request] = (await records.export_state())["requests"]
    assert request["request_id"] == created["request_id"] == "REQ-0001"
    assert request["status"] == "submitted" and request["cpt_code"] == "72148"
    assert request["icd10_codes"] == ["M54.5"] and request["patient_id"] == "P1"
    assert [h["status"] for h in request["history"]] == ["draft", "submitted"]
    assert request["updated_at"] == "2026-03-02T10:00:00Z"


async def test_inbox_documents_are_listed_without_content_and_marked_read_once_opened(
    records: EnvClient, mcp_http: httpx2.AsyncClient,
) -> None:
    await records.data_add([DataPart(data=SEED)])

    async with await _session(records, mcp_http) as session:
        [listed] = (await _call(session, "list_inbox", unread_only=True))["documents"]
        opened = await _call(session, "read_inbox_document", document_id=listed["document_id"])
        unread = await _call(session, "list_inbox", unread_only=True)

    assert "content" not in listed and opened["content"] == "MRI lumbar spine"
    assert unread == {"documents": []}
    assert (await records.export_state())["inbox"][0]["read"] is True


@pytest.mark.parametrize(("tool", "args", "message"), [
    ("create_request", {"patient_id": "P9"}, "no patients record with patient_id 'P9'"),
    ("create_request", {"patient_id": "P2", "referral_id": "R1"}, "not about patient 'P2'"),
    ("update_request", {"request_id": "REQ-0404", "status": "submitted"}, "no requests record"),
], ids=["unknown patient", "someone else's referral", "unknown request"])
async def test_a_request_about_unknown_records_is_a_tool_error(
    records: EnvClient, mcp_http: httpx2.AsyncClient, tool: str, args: dict[str, Any], message: str,
) -> None:
    await records.data_add([DataPart(data=SEED)])

    async with await _session(records, mcp_http) as session:
        result = await session.call_tool(tool, args)

    assert result.is_error and message in result.text
    assert (await records.export_state())["requests"] == []


async def test_an_unknown_status_is_a_tool_error_and_leaves_the_request_as_it_was(
    records: EnvClient, mcp_http: httpx2.AsyncClient,
) -> None:
    await records.data_add([DataPart(data=SEED)])

    async with await _session(records, mcp_http) as session:
        created = await _call(session, "create_request", patient_id="P1")
        result = await session.call_tool("update_request", {"request_id": created["request_id"],
                                                            "status": "teleported"})

    assert result.is_error and "status" in result.text
    assert (await records.export_state())["requests"][0]["status"] == "draft"


async def test_a_dropped_document_arrives_in_the_inbox_when_the_clock_reaches_it(records: EnvClient) -> None:
    await records.clock_set(MONDAY_10, frozen=True)
    await records.register_triggers([{"at": "2026-03-02T10:05:00Z", "action": "drop_inbox_document",
                                      "data": {"kind": "fax", "title": "Lab result", "content": "A1c 6.1"}}])

    assert (await records.export_state())["inbox"] == []
    await records.clock_advance(300)
    [document] = (await records.export_state())["inbox"]
    assert document["document_id"] == "DOC-0001" and document["received_at"] == "2026-03-02T10:05:00Z"


async def test_the_export_loads_back_into_the_same_records(
    records: EnvClient, mcp_http: httpx2.AsyncClient,
) -> None:
    await records.data_add([DataPart(data=SEED)])
    async with await _session(records, mcp_http) as session:
        await _call(session, "create_request", patient_id="P1", cpt_code="72148", status="submitted")
    exported = await records.export_state()

    await records.data_reset()
    await records.data_add([DataPart(data=exported)])

    assert await records.export_state() == exported


async def test_a_key_already_present_is_refused_with_duplicate_id(records: EnvClient) -> None:
    await records.data_add([DataPart(data=SEED)])

    with pytest.raises(EnvRpcError) as caught:
        await records.data_add([DataPart(data={"patients": SEED["patients"][:1]})])

    assert caught.value.code == -32000 and caught.value.error_code == "duplicate_id"
    assert caught.value.data["ids"] == {"patients": ["P1"]}
