"""A Harbor task's own MCP servers, run in its environment and served to the agent on loopback.

A task's ``[[environment.mcp_servers]]`` with ``transport = "stdio"`` names a command of the task's image: in
Harbor the agent runs inside the container and starts the server there itself. Here the agent runs confined
on the host, so the runner starts the server where Harbor would, inside the container (``docker exec -i``, as
the agent's user, in the workdir), holds one MCP session to it over that stdio, and serves the agent a
streamable-HTTP MCP server on loopback that forwards ``tools/list`` and ``tools/call`` to it unchanged
(:class:`TaskServerBridge`). The agent is given that server under the task's name for it, as it is given any
env, and reaches it through one more door of its confinement. The server's stderr is kept in the run's folder
for a failed start.

A server at a URL of the environment's network (a compose sidecar's) is reached through a relay
(:class:`TaskServerRelay`): a streamable-HTTP one is given to the agent at the relay's address as it is; an SSE
one (whose second endpoint the server names at run time) is held by a bridge whose session reads it through
the relay, so the agent gets streamable HTTP, as for every env.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

import mcp_types as types
from mcp import ClientSession
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.lowlevel import Server
from mcp.server.lowlevel.server import ServerRequestContext
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette

from prefect_agentenv.run_services.harbor_mcp import TURN_OVER
from prefect_agentenv.runtime.launch.guest_server import GuestServer, start_guest_server

logger = logging.getLogger("prefect_agentenv.harbor")

MCP_PATH = "/mcp"
SESSION_SECONDS = 24 * 3600.0
"""How long an SSE session may wait for the server's next event: it lives as long as the agent."""
START_TIMEOUT = 60.0
"""How long a task's server has to answer ``initialize`` after its ``docker exec`` starts (or, at a URL, after the
first try)."""
_RETRY = 0.5


class TaskServerError(RuntimeError):
    """A task's MCP server did not start or did not answer its handshake: one line, with its stderr's last."""


@dataclass(frozen=True)
class StdioCommand:
    """Where and how a task's stdio server runs in the environment."""

    container: str
    command: str
    args: tuple[str, ...]
    user: str | None
    workdir: str


class TaskServerBridge:
    """One task server as the agent reaches it: served on loopback first (its URL is a door of the agent's
    confinement, fixed before the agent starts), connected to the environment once the environment is the
    one the agent works in (a harness's is started again with its workspace mounted)."""

    def __init__(self, name: str, errlog: Path, turn: asyncio.Event | None = None,
                 relay: TaskServerRelay | None = None) -> None:
        self.name = name
        self.turn = turn
        """Set while the agent's turn is on; clear, a tool call is refused (None: always on)."""
        self.relay = relay
        """For an SSE server: the run's own relay its session reads the server through (stopped with the bridge)."""
        self.url = ""
        self._errlog = errlog
        self._server: GuestServer | None = None
        self._session: ClientSession | None = None
        self._connected = asyncio.Event()
        self._done = asyncio.Event()
        self._holder: asyncio.Task[None] | None = None

    async def serve(self) -> str:
        """Its loopback server started; its URL."""
        self._server = await start_guest_server(self._app(), "127.0.0.1", graceful_shutdown_seconds=1,
                                                lifespan=True, name=f"task MCP server {self.name}")
        self.url = f"{self._server.base_url}{MCP_PATH}"
        return self.url

    async def connect(self, where: StdioCommand | str) -> None:
        """The server's session opened (one at a time): its command started in the environment (a stdio server), or
        its SSE endpoint reached at ``where``, a URL of the run's relay into the environment's network, tried again
        every half second while the server is not listening yet (a sidecar with no healthcheck to wait for).

        Raises:
            TaskServerError: it did not answer ``initialize`` within ``START_TIMEOUT``.
        """
        deadline = asyncio.get_running_loop().time() + START_TIMEOUT
        while True:
            try:
                self._session = await self._open(where, deadline)
            except Exception as exc:
                await self._disconnect()
                left = deadline - asyncio.get_running_loop().time()
                if isinstance(where, str) and not isinstance(exc, TimeoutError) and left > _RETRY:
                    await asyncio.sleep(_RETRY)
                    continue
                what = where if isinstance(where, str) else where.command
                raise TaskServerError(f"the task's MCP server '{self.name}' ({what}) did not start in the "
                                      f"environment: {_why(exc, self._errlog)}") from exc
            self._connected.set()
            return

    async def _open(self, where: StdioCommand | str, deadline: float) -> ClientSession:
        await self._disconnect()
        self._done = asyncio.Event()
        ready: asyncio.Future[ClientSession] = asyncio.get_running_loop().create_future()
        self._holder = asyncio.create_task(_hold_session(where, self._errlog, ready, self._done),
                                           name=f"task MCP server {self.name}")
        return await asyncio.wait_for(asyncio.shield(ready), max(0.0, deadline - asyncio.get_running_loop().time()))

    async def stop(self) -> None:
        """Its loopback server stopped, then its session closed (the command in the environment gets EOF), then
        its relay, if it has one."""
        try:
            if self._server is not None:
                await self._server.stop()
        finally:
            await self._disconnect()
            if self.relay is not None:
                await self.relay.stop()

    async def _disconnect(self) -> None:
        self._connected.clear()
        self._session = None
        holder, self._holder = self._holder, None
        if holder is None:
            return
        self._done.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(holder, return_exceptions=True), 10)
        holder.cancel()
        await asyncio.gather(holder, return_exceptions=True)

    async def _connected_session(self) -> ClientSession:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._connected.wait(), START_TIMEOUT)
        if self._session is None:
            raise MCPError(types.INTERNAL_ERROR, f"the task's MCP server '{self.name}' is not running")
        return self._session

    def _app(self) -> Starlette:
        """A streamable-HTTP MCP app whose tools are the task server's, each call passed to it as it came."""

        async def list_tools(_ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
                             ) -> types.ListToolsResult:
            return await (await self._connected_session()).list_tools(params=params)

        async def call_tool(_ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
            if self.turn is not None and not self.turn.is_set():
                return types.CallToolResult(content=[types.TextContent(type="text", text=TURN_OVER)], is_error=True)
            try:
                return await (await self._connected_session()).call_tool(params.name, params.arguments)
            except MCPError as exc:  # the task's server refused the call: the agent reads why, as a tool error
                return types.CallToolResult(content=[types.TextContent(type="text", text=str(exc))], is_error=True)

        server: Server = Server(self.name, version="1", on_list_tools=list_tools, on_call_tool=call_tool)
        return server.streamable_http_app(streamable_http_path=MCP_PATH, host="127.0.0.1")


async def _hold_session(where: StdioCommand | str, errlog: Path, ready: asyncio.Future[ClientSession],
                        done: asyncio.Event) -> None:
    """Opens the session and keeps it until ``done``: one task enters and leaves the transport's scopes."""
    errlog.parent.mkdir(parents=True, exist_ok=True)
    try:
        with errlog.open("a", encoding="utf-8") as err:
            async with _transport(where, err) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                ready.set_result(session)
                await done.wait()
    except BaseException as exc:
        if not ready.done():
            ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(str(exc)))
        elif not isinstance(exc, asyncio.CancelledError):
            logger.warning("a task's MCP server (%s) ended: %s", where if isinstance(where, str) else where.command, exc)
        raise


def _transport(where: StdioCommand | str, errlog: TextIO) -> AbstractAsyncContextManager[Any]:
    """The server's stdio through ``docker exec -i``, or its SSE endpoint (read with no idle limit: the session
    lives as long as the agent)."""
    if isinstance(where, str):
        return sse_client(where, sse_read_timeout=SESSION_SECONDS)
    from prefect_agentenv.runtime.harbor.environment import stdio_argv

    docker, *args = stdio_argv(where.container, [where.command, *where.args], user=where.user, workdir=where.workdir)
    docker_env = {key: value for key, value in os.environ.items() if key.startswith("DOCKER_")}
    return stdio_client(StdioServerParameters(command=docker, args=args, env=docker_env or None), errlog=errlog)


def _why(exc: BaseException, errlog: Path) -> str:
    if isinstance(exc, TimeoutError):
        said = f"no answer to initialize within {START_TIMEOUT:g}s"
    else:
        said = str(exc) or type(exc).__name__
        while isinstance(exc, ExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
            said = str(exc) or type(exc).__name__
    try:
        tail = errlog.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-1:]
    except OSError:
        tail = []
    return f"{said}; its stderr ends: {tail[0][-300:]}" if tail else said


_REFUSED = ("HTTP/1.1 409 Conflict\r\ncontent-type: text/plain\r\ncontent-length: {n}\r\nconnection: close\r\n\r\n"
            "{text}")
_TURN_POLL = 0.2


class TaskServerRelay:
    """A task's MCP server served at a URL in the environment's network (a compose sidecar's), relayed to loopback.

    The runner's daemon has no bridge to publish the sidecar's port on, so each connection the agent opens to
    the relay's loopback port is carried by its own ``docker exec -i`` of bash's ``/dev/tcp`` into the
    environment's network namespace, bytes both ways: the agent's MCP client talks to the server itself,
    whatever its version. Outside the agent's turn a new connection is answered 409 and open ones are closed.
    """

    def __init__(self, name: str, url: str, turn: asyncio.Event | None = None) -> None:
        parts = urlsplit(url)
        self.name, self.turn = name, turn
        self._host, self._port = parts.hostname or "localhost", parts.port or (443 if parts.scheme == "https" else 80)
        self._path = parts.path or "/"
        self.url = ""
        self._container: str | None = None
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.Task[None]] = set()
        self._watch: asyncio.Task[None] | None = None

    async def serve(self) -> str:
        """Its loopback port listening; the URL the agent is given (the server's own path on it)."""
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}{self._path}"
        self._watch = asyncio.create_task(self._close_outside_turns(), name=f"task MCP relay {self.name}")
        return self.url

    def connect(self, container: str) -> None:
        """Relay into ``container``'s network from now on."""
        self._container = container

    async def stop(self) -> None:
        """Its port closed, every open connection and its ``docker exec`` ended."""
        if self._watch is not None:
            self._watch.cancel()
        if self._server is not None:
            self._server.close()
        await self._close_all()
        if self._server is not None:
            await self._server.wait_closed()

    async def _close_all(self) -> None:
        for task in list(self._open):
            task.cancel()
        await asyncio.gather(*self._open, return_exceptions=True)

    async def _close_outside_turns(self) -> None:
        while self.turn is not None:
            await asyncio.sleep(_TURN_POLL)
            if not self.turn.is_set() and self._open:
                await self._close_all()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._open.add(task)
        try:
            if self._container is None or (self.turn is not None and not self.turn.is_set()):
                text = TURN_OVER + "\n"
                writer.write(_REFUSED.format(n=len(text.encode()), text=text).encode())
                await writer.drain()
                return
            await self._carry(self._container, reader, writer)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._open.discard(task)
            writer.close()
            with contextlib.suppress(ConnectionError, asyncio.CancelledError):
                await writer.wait_closed()

    async def _carry(self, container: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        from prefect_agentenv.runtime.harbor.environment import tcp_in

        async with tcp_in(container, self._host, self._port) as process:
            assert process.stdin is not None and process.stdout is not None
            pumps = [asyncio.ensure_future(_pump(reader, process.stdin)),
                     asyncio.ensure_future(_pump(process.stdout, writer))]
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)  # either side gone, so is the connection
            for pump in pumps:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)


async def _pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    while data := await source.read(65536):
        sink.write(data)
        await sink.drain()
