"""The email env's MCP tools. Each returns an object, so clients get structured content.

Each tool's return annotation is its advertised output schema (an open object): see
:mod:`prefect_agentenv.envs.records.tools`.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from prefect_agentenv.envs.email.mailbox import Mailbox


def register_tools(mcp: MCPServer, mailbox: Mailbox) -> None:
    """Add ``email_search``, ``email_read``, ``send``, ``list_sent`` and ``list_folders``."""

    @mcp.tool()
    async def email_search(query: str = "", folder: str | None = None, limit: int = 20) -> dict[str, Any]:
        """Search the mailbox. Every word of the query must appear in the sender, recipients,
        subject or body (case-insensitive); an empty query lists everything. Newest first.
        Optionally restrict to one folder (e.g. "inbox", "sent")."""
        return {"emails": [e.summary() for e in mailbox.search(query, folder, limit)]}

    @mcp.tool()
    async def email_read(id: str) -> dict[str, Any]:  # noqa: A002 - the tool's public argument name
        """Read one email in full by its id, and mark it read."""
        try:
            return mailbox.mark_read(id).record()
        except KeyError as exc:
            raise ToolError(exc.args[0]) from None

    @mcp.tool()
    async def send(to: list[str] | str, subject: str, body: str, in_reply_to: str | None = None,
                   cc: list[str] | str | None = None) -> dict[str, Any]:
        """Send an email from this mailbox's account. `to` and `cc` take one address, a
        comma-separated string or a list. Set `in_reply_to` to the id of the email you answer."""
        try:
            sent = mailbox.send(_as_list(to), subject, body, cc=_as_list(cc), in_reply_to=in_reply_to)
        except KeyError as exc:
            raise ToolError(f"cannot reply: {exc.args[0]}") from None
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        return {"status": "sent", **sent.record()}

    @mcp.tool()
    async def list_sent() -> dict[str, Any]:
        """Every email sent from this mailbox, newest first."""
        return {"emails": [e.record() for e in mailbox.search(folder="sent", limit=10_000)]}

    @mcp.tool()
    async def list_folders() -> dict[str, Any]:
        """The mailbox's folders with their message and unread counts."""
        return {"folders": mailbox.folders()}


def _as_list(value: list[str] | str | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return [v.strip() for v in value if v.strip()]
