"""Outcome check of the reference pair's task (``task_overhead.py --outcome``): one reply went to Dana.

Run by the task's ``env_outcome_verifier`` step and, for the same wire work, by ``_bare.py`` in a
process of its own.
"""

from prefect_agentenv.protocols.mcp import mcp_session


async def verify(mcp_url: str) -> list[dict[str, object]]:
    async with mcp_session(mcp_url) as mcp:
        sent = (await mcp.call_tool("email_search", {"query": "Re: Q3", "folder": "sent"})).data
    return [{"id": "replied_to_dana", "result": bool(sent), "justification": f"search returned {sent!r}"[:300]}]
