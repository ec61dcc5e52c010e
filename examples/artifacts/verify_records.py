"""Outcome check used by the records pipeline: the agent's side of the work, done over MCP here,
is visible through the env's tools (a request was created and submitted for Ana Diaz)."""

from prefect_agentenv.protocols.mcp import mcp_session


async def verify(mcp_url):
    async with mcp_session(mcp_url) as mcp:
        created = (await mcp.call_tool("create_request", {"patient_id": "P1", "cpt_code": "72148",
                                                          "referral_id": "R1"})).raise_for_error().data
        request_id = created["request_id"] if isinstance(created, dict) else None
        await mcp.call_tool("update_request", {"request_id": request_id, "status": "submitted"})
        listed = (await mcp.call_tool("list_requests", {"patient_id": "P1"})).data
    requests = listed.get("requests", listed) if isinstance(listed, dict) else listed
    statuses = [r.get("status") for r in requests or []]
    return [{"id": "request_submitted", "result": "submitted" in statuses, "justification": f"statuses {statuses}"}]
