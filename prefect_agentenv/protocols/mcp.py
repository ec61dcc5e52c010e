"""MCP client helpers over streamable HTTP, for talking to an env's tools.

Built on mcp 2.x's ``Client`` with a ``streamable_http_client`` transport. The connection is
negotiated in ``auto`` mode: the client probes ``server/discover`` (2026-era servers answer it
and the session goes stateless), and any server that rejects the probe — every mcp 1.x
server does, with an HTTP 400 JSON-RPC error — gets the classic ``initialize`` handshake,
at whatever handshake-era version it counter-offers (2024-11-05 … 2025-11-25).

Pass one shared ``httpx2.AsyncClient`` (see :func:`mcp_http_client`) to every session of a
run: setting up a session on a warm client is ~3 ms instead of ~26 ms.

Foreign errors (``MCPError``, httpx2 errors, timeouts, malformed results, and the exception
groups the transport's task group wraps them in) become
:class:`~prefect_agentenv.exceptions.McpError` here; exceptions raised by the caller's own
code inside the session pass through untouched.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from importlib import metadata
from typing import Any, Literal

import anyio
import httpx2
from mcp.client.client import Client
from mcp.client.streamable_http import StreamableHTTPError, streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, Implementation
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from prefect_agentenv.exceptions import McpError, McpToolError
from prefect_agentenv.jsontypes import JsonObject, JsonValue
from prefect_agentenv.protocols.tls import ssl_context

_FOREIGN: tuple[type[BaseException], ...] = (
    MCPError, httpx2.HTTPError, StreamableHTTPError, TimeoutError, ValidationError,
    anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream,
)
"""What the mcp transport and session raise; mapped to ``McpError`` at this boundary."""

_LIST_PAGES_MAX = 100
"""A paginating server that never ends its listing cannot hang ``list_tools``."""


def _client_info() -> Implementation:
    try:
        version = metadata.version("prefect-agentenv")
    except metadata.PackageNotFoundError:
        version = "0"
    return Implementation(name="prefect-agentenv", version=version)


def mcp_http_client(*, timeout: float = 30.0, headers: Mapping[str, str] | None = None) -> httpx2.AsyncClient:
    """An httpx2 client for MCP sessions; create one per run and share it.

    The read timeout is long because a tool call's answer may stream for a while; the
    per-request bound is the session's ``timeout``.
    """
    return httpx2.AsyncClient(timeout=httpx2.Timeout(timeout, read=300.0), headers=dict(headers or {}),
                              verify=ssl_context())


class ToolInfo(BaseModel):
    """A tool as listed by the server."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str | None = None
    input_schema: JsonObject = Field(default_factory=dict)
    """The tool's JSON Schema, as listed."""


class ToolCallResult(BaseModel):
    """The outcome of one tool call.

    ``is_error`` results are returned, not raised — a failing tool is an ordinary outcome for
    an agent. Call :meth:`raise_for_error` when a failure should stop you.
    """

    tool: str
    is_error: bool = False
    text: str = ""
    """The text content blocks, joined by newlines."""
    structured: JsonObject | None = None
    """``structuredContent`` when the server sent it."""
    content: list[JsonObject] = Field(default_factory=list)
    """Every content block as sent."""

    @property
    def data(self) -> Any:
        """The structured result, else the text parsed as JSON, else ``None``.

        Older servers only send text; tools that return objects send them as JSON text.
        """
        if self.structured is not None:
            return self.structured
        try:
            return json.loads(self.text)
        except ValueError:
            return None

    def raise_for_error(self) -> ToolCallResult:
        """Return self, or raise ``McpToolError`` carrying the tool's message if it failed."""
        if self.is_error:
            raise McpToolError(f"tool {self.tool!r} failed: {self.text}", tool=self.tool)
        return self

    @classmethod
    def from_mcp(cls, tool: str, result: CallToolResult) -> ToolCallResult:
        blocks = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content]
        text = "\n".join(b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str))
        return cls(tool=tool, is_error=bool(result.is_error), text=text,
                   structured=result.structured_content, content=blocks)


class McpClient:
    """An open MCP session; get one from :func:`mcp_session`."""

    def __init__(self, client: Client, url: str) -> None:
        self._client = client
        self.url = url
        self.protocol_version: str = client.protocol_version
        """The negotiated MCP protocol revision, e.g. ``2026-07-28`` or ``2025-03-26``."""
        info = client.server_info
        self.server_name: str | None = info.name if info is not None else None
        """The server's self-reported name (2026-era servers may not send one)."""

    async def list_tools(self) -> list[ToolInfo]:
        """Every tool the server offers, following pagination."""
        tools: list[ToolInfo] = []
        cursor: str | None = None
        async with _mapped(self.url, "tools/list"):
            for _ in range(_LIST_PAGES_MAX):
                page = await self._client.list_tools(cursor=cursor)
                tools.extend(ToolInfo(name=t.name, description=t.description, input_schema=t.input_schema)
                             for t in page.tools)
                cursor = page.next_cursor
                if cursor is None:
                    break
        return tools

    async def call_tool(self, name: str, args: Mapping[str, JsonValue] | None = None, *,
                        timeout: float | None = None) -> ToolCallResult:
        """Call a tool; a tool-level failure comes back with ``is_error`` set.

        Raises:
            McpError: the server rejected the call (unknown method, bad request) or broke.
        """
        async with _mapped(self.url, f"tools/call {name!r}"):
            result = await self._client.call_tool(name, dict(args or {}), read_timeout_seconds=timeout)
        return ToolCallResult.from_mcp(name, result)


@asynccontextmanager
async def mcp_session(
    url: str,
    *,
    http: httpx2.AsyncClient | None = None,
    timeout: float | None = 60.0,
    mode: Literal["auto", "legacy"] = "auto",
) -> AsyncIterator[McpClient]:
    """Open an MCP session over streamable HTTP.

    Args:
        url: the MCP endpoint, e.g. ``http://127.0.0.1:8123/mcp``.
        http: the run's shared httpx2 client; a private one is made (and closed) when omitted.
        timeout: per-request timeout in seconds (``None`` waits forever).
        mode: ``auto`` negotiates with any server; ``legacy`` forces the ``initialize``
            handshake, as an mcp 1.x client would.

    Raises:
        McpError: the server could not be reached or the session could not be set up.

    Example:
        ```python
        async with mcp_session(env.mcp_url, http=shared) as s:
            tools = await s.list_tools()
            reply = (await s.call_tool("send", {"to": "dana@example.com", ...})).raise_for_error()
        ```
    """
    stack = AsyncExitStack()
    try:
        client_http = http if http is not None else await stack.enter_async_context(mcp_http_client())
        client = Client(streamable_http_client(url, http_client=client_http), mode=mode,
                        read_timeout_seconds=timeout, client_info=_client_info(), cache=None)
        await stack.enter_async_context(client)
    except BaseException as exc:
        await stack.aclose()
        _raise_mapped(exc, url, "opening the session")
        raise
    try:
        yield McpClient(client, url)
    except BaseException as exc:
        # The session's task group hands the body's exception back wrapped in an exception
        # group: unwrap it so callers catch what they raised. A transport failure instead
        # cancels the body and resurfaces here, to be mapped.
        try:
            suppressed = await stack.__aexit__(type(exc), exc, exc.__traceback__)
        except BaseException as exit_exc:
            if exit_exc is exc or any(leaf is exc for leaf in _leaves(exit_exc)):
                raise exc from exc.__cause__
            _raise_mapped(exit_exc, url, "the session")
            raise
        if not suppressed:
            raise
    else:
        try:
            await stack.aclose()
        except Exception as exc:
            _raise_mapped(exc, url, "closing the session")
            raise


def _raise_mapped(exc: BaseException, url: str, doing: str) -> None:
    """Raise the ``McpError`` for a foreign failure; return (so the caller re-raises) otherwise."""
    mapped = _as_mcp_error(exc, url, doing)
    if mapped is not None:
        raise mapped from exc


@asynccontextmanager
async def _mapped(url: str, doing: str) -> AsyncIterator[None]:
    """Re-raise foreign MCP/transport failures as ``McpError``; let everything else through."""
    try:
        yield
    except Exception as exc:
        _raise_mapped(exc, url, doing)
        raise


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _as_mcp_error(exc: BaseException, url: str, doing: str) -> McpError | None:
    """The ``McpError`` for a foreign failure, or ``None`` if any part of it is not foreign.

    The transport runs requests in a task group, so a single failure can arrive wrapped in
    (nested) exception groups; only groups made entirely of foreign errors are translated.
    """
    leaves = _leaves(exc)
    if not leaves or not all(isinstance(leaf, _FOREIGN) for leaf in leaves):
        return None
    leaf = leaves[0]
    if isinstance(leaf, MCPError):
        return McpError(f"{url} answered {doing} with [{leaf.code}] {leaf.message}",
                        url=url, code=leaf.code, data=leaf.data)
    if isinstance(leaf, httpx2.TimeoutException | TimeoutError):
        return McpError(f"{url} did not answer {doing} in time ({type(leaf).__name__})", url=url)
    if isinstance(leaf, httpx2.HTTPStatusError):
        status = leaf.response.status_code
        return McpError(f"{url} answered {doing} with HTTP {status}", url=url, code=status)
    if isinstance(leaf, httpx2.HTTPError):
        return McpError(f"could not reach {url} for {doing}: {leaf!r}", url=url)
    return McpError(f"the MCP session with {url} broke during {doing}: {leaf!r}", url=url)
