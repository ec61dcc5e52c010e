"""Outcome check for harness-email: the agent under test sent Dana a reply through the env's tool."""

from prefect_agentenv.protocols.mcp import mcp_session


async def verify(mcp_url):
    async with mcp_session(mcp_url) as mcp:
        sent = (await mcp.call_tool("list_sent", {})).data
    emails = sent.get("emails", []) if isinstance(sent, dict) else []
    to_dana = [e for e in emails if any("dana" in str(address).lower() for address in e.get("to", []))]
    return [
        {"id": "replied_to_dana", "result": bool(to_dana), "justification": f"sent: {emails!r}"[:300]},
        {"id": "about_q3", "result": any("q3" in str(e.get("subject", "")).lower() for e in to_dana),
         "justification": "the reply's subject names the Q3 numbers"},
    ]
