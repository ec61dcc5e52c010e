"""Outcome check for env-roundtrip: the scheduled follow-up from Dana was delivered."""

from prefect_agentenv.protocols.mcp import mcp_session


async def verify(mcp_url):
    async with mcp_session(mcp_url) as mcp:
        found = (await mcp.call_tool("email_search", {"query": "Any update"})).data
        inbox = (await mcp.call_tool("email_search", {"query": ""})).data
    return [
        {"id": "follow_up_delivered", "result": bool(found), "justification": f"search returned {found!r}"[:300]},
        {"id": "seed_kept", "result": len(inbox) >= 2 if isinstance(inbox, list) else bool(inbox),
         "justification": "the seeded emails are still there"},
    ]
