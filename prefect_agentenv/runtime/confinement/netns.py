"""The host's end of a confined agent's network (docs/security.md, "The network").

A confined agent runs in a network namespace of its own (bwrap ``--unshare-net``): only its own
loopback. What it may reach, and what must reach it, crosses through Unix sockets in a folder
both sides see (mounted at :data:`INSIDE_FOLDER`), as Anthropic's sandbox-runtime reaches its
proxies; a forwarder inside (``runtime/confinement/netns_inside.py``, standard library only, run by the base
Python installation) listens on the same ``host:port`` numbers inside, so no URL is rewritten:

* **its A2A port**: this side takes the agent's port on the host (picked by the launcher) at once,
  listens on it once ``a2a.sock`` exists (the forwarder makes it when the agent's port accepts: the
  readiness check sees a refused port until then, as for an unconfined agent) and passes each
  connection to it, where the forwarder connects to the agent;
* **doors**: a model endpoint, a widening (any request), an env's MCP endpoint. An MCP door is
  filtered at the HTTP level: each request's path must be the env URL's path or below it (its
  ``/mcp``), never the env's data plane (``/agentenv``) or card on the same port; anything else
  is answered ``403`` with a one-line reason and the connection closed.

Everything else is refused by the namespace itself: other loopback ports (the Prefect API), the
internet. The sockets the forwarder makes (``a2a.sock``, ``control.sock``) are in a folder the agent
can write, so before this side sends anything to one it checks that the path is a socket, not a link
the agent put there to a socket of the host's, and that what answers lives outside the runner's
own network namespace. Each bridge is reached by its instance id (:func:`open_doors`) and closed by its
launcher when the agent stops (:meth:`Bridge.close`): listeners, live connections, the folder.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import shutil
import socket
import stat
import struct
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import unquote, urlsplit

from prefect_agentenv.exceptions import DeployError
from prefect_agentenv.runtime.launch.base import Door

logger = logging.getLogger("prefect_agentenv.runtime.confinement.netns")

INSIDE_FOLDER = "/run/agentenv-net"
"""Where the bridge's socket folder is mounted inside."""
FORWARDER_INSIDE = "/run/agentenv-forward.py"
FORWARDER = Path(__file__).with_name("netns_inside.py")
_BUFFER = 65536
_CONTROL_TIMEOUT = 10.0
_READY_POLL_SECONDS = 0.01
_DRAIN_SECONDS = 1.0

_bridges: dict[str, Bridge] = {}
"""Open bridges by instance id: how a door is opened for an agent whichever launcher started it."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine's loopback (the only hosts a door can forward to): ``localhost`` or
    a loopback address, never a name that merely starts like one."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _address(door: Door) -> tuple[str, int]:
    """Where a door listens inside (``localhost`` is 127.0.0.1 there): doors on one address share a listener."""
    return ("127.0.0.1" if door.host == "localhost" else door.host), door.port


def base_python() -> Path:
    """The base installation's interpreter (not a venv's), which runs the forwarder inside."""
    return Path(os.path.realpath(getattr(sys, "_base_executable", sys.executable) or sys.executable))


def python_folders() -> list[Path]:
    """What the forwarder's interpreter needs visible: its installation (read-only inside)."""
    return sorted({Path(sys.base_prefix).resolve(), base_python().parent.parent})


class Bridge:
    """The host's end of one confined agent's network: its A2A port and its doors.

    Args:
        instance_id: the agent instance it serves (its handle in :func:`open_doors`).
        host: the address the agent's A2A port is reached at, here and inside.
        port: the agent's A2A port, the same number here and inside.
    """

    def __init__(self, instance_id: str, *, host: str, port: int) -> None:
        self.instance_id = instance_id
        self.host = host
        self.port = port
        self.folder = Path(tempfile.mkdtemp(prefix=f"agentenv-net-{instance_id}-"))  # whose, for a person looking
        self.doors: dict[Door, str] = {}
        """Each door and its socket's name in the folder (doors on one host:port share one)."""
        self._sockets: dict[tuple[str, int], str] = {}
        self._servers: list[asyncio.AbstractServer] = []
        self._writers: set[asyncio.StreamWriter] = set()
        self._port = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        self._serving: asyncio.Future[None] | None = None

    async def listen(self, doors: tuple[Door, ...]) -> None:
        """Take the agent's A2A port on the host and open the first doors (before the agent starts).

        Raises:
            OSError: the port is taken (the launcher retries with another).
            DeployError: a door is not on this machine's loopback.
        """
        _bridges[self.instance_id] = self
        self._port.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._port.bind((self.host, self.port))  # taken now; connections are refused until it listens
        self._port.setblocking(False)
        for door in doors:
            await self._add(door)
        self._serving = asyncio.ensure_future(self._serve_when_ready())

    async def _serve_when_ready(self) -> None:
        while not (self.folder / "a2a.sock").exists():
            await asyncio.sleep(_READY_POLL_SECONDS)
        self._servers.append(await asyncio.start_server(self._a2a_connection, sock=self._port))

    def forwarder_argv(self) -> list[str]:
        """The forwarder's argv inside, before the agent's command (which follows it after ``--``)."""
        doors = [f"{host}:{port}={name}" for (host, port), name in self._sockets.items()]
        return [str(base_python()), "-I", "-S", "-B", FORWARDER_INSIDE, INSIDE_FOLDER, self.host, str(self.port),
                *doors, "--"]

    async def open(self, doors: list[Door]) -> None:
        """Open more doors once the agent runs (an env given to it after it started).

        Raises:
            DeployError: a door is not on the loopback, or the forwarder inside did not open it.
        """
        for door in doors:
            if door not in self.doors and (name := await self._add(door)) is not None:
                await self._ask_inside(f"listen {door.host} {door.port} {name}")

    @property
    def labels(self) -> list[str]:
        """The doors as the record names them."""
        return [door.label for door in self.doors]

    def close(self) -> None:
        """Stop listening, cut live connections, remove the folder (synchronous: it runs on cancel paths too)."""
        _bridges.pop(self.instance_id, None)
        if self._serving is not None:
            self._serving.cancel()
        for server in self._servers:
            server.close()
        self._port.close()
        # Aborting the sockets ends each connection's copies at once; cancelling their tasks instead
        # would make asyncio's stream server log every one as an error.
        for writer in list(self._writers):
            writer.transport.abort()
        shutil.rmtree(self.folder, ignore_errors=True)

    async def _add(self, door: Door) -> str | None:
        """Listen for a door's connections on this side; its socket's name, or None when its host:port already
        has one (a connection there may then also ask for this door's path)."""
        if not is_loopback(door.host):
            raise DeployError(f"a confined agent's network reaches loopback endpoints only, and its {door.label} is "
                              "not on this machine's loopback: serve it on the loopback (the run's model gateway), or "
                              "widen the agent's network with network: public on its block or "
                              "PREFECT_AGENTENV_AGENT_NETWORK=public (recorded)")
        address = _address(door)
        if address in self._sockets:
            self.doors[door] = self._sockets[address]
            return None
        name = f"door-{len(self._sockets) + 1}.sock"
        handler = self._door_connection(door)
        self._servers.append(await asyncio.start_unix_server(handler, str(self.folder / name)))
        self._sockets[address] = self.doors[door] = name
        return name

    async def _ask_inside(self, line: str) -> None:
        try:
            reader, writer = await asyncio.wait_for(self._connect_inside("control.sock"), _CONTROL_TIMEOUT)
            writer.write(f"{line}\n".encode())
            answer = (await asyncio.wait_for(reader.readline(), _CONTROL_TIMEOUT)).decode().strip()
            writer.close()
        except (OSError, TimeoutError) as exc:
            raise DeployError(f"the confined agent's network forwarder did not answer ({exc})") from None
        if answer != "ok":
            raise DeployError(f"the confined agent's network forwarder could not {line.split()[0]}: {answer}")

    async def _connect_inside(self, name: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection to a socket the forwarder made, refused when the agent swapped it for a way out.

        Raises:
            OSError: not a socket, or answered from the runner's own network namespace.
        """
        path = self.folder / name
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            raise OSError(f"{path} is not a socket")
        reader, writer = await asyncio.open_unix_connection(str(path))
        if _peer_network(writer) in (None, _own_network()):
            writer.close()
            logger.warning("%s: %s answered from outside the agent's network namespace: not used", self.instance_id,
                           name)
            raise OSError(f"{path} is not the agent's")
        return reader, writer

    async def _a2a_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """The runner reaching the agent: passed to ``a2a.sock`` inside (refused until the agent is up)."""
        await self._tracked(reader, writer, lambda: self._connect_inside("a2a.sock"), None)

    def _door_connection(self, first: Door) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
        """Connections to the listener of ``first``'s host:port, held to every door there (as opened by then)."""
        address = _address(first)

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            doors = [door for door in self.doors if _address(door) == address]
            await self._tracked(reader, writer, lambda: asyncio.open_connection(first.host, first.port), doors)

        return connection

    async def _tracked(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                       connect: Callable[[], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]],
                       doors: list[Door] | None) -> None:
        """One connection joined to the other side, both ends where :meth:`close` can cut them, closed after."""
        self._writers.add(writer)
        up_writer: asyncio.StreamWriter | None = None
        try:
            up_reader, up_writer = await connect()
            self._writers.add(up_writer)
            if doors is None or any(door.path is None for door in doors):
                await asyncio.gather(_copy(reader, up_writer), _copy(up_reader, writer))
            else:
                await self._filtered(doors, reader, writer, up_reader, up_writer)
        except (OSError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # an end went away, nothing listens yet, or the agent sent a broken chunk: the connection ends
        finally:
            for end in (writer, up_writer):
                if end is not None:
                    self._writers.discard(end)
                    end.close()

    async def _filtered(self, doors: list[Door], reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                        up_reader: asyncio.StreamReader, up_writer: asyncio.StreamWriter) -> None:
        """MCP doors, request by request: the first request outside their paths is answered 403, and the
        connection ends once what the endpoint was still answering has reached the agent."""
        answers = asyncio.ensure_future(_copy(up_reader, writer, eof=False))
        try:
            refused = await _requests(reader, up_writer, doors)
            if refused is None:
                await answers
                return
            logger.warning("%s: refused a request of the confined agent to %s:%s: %s", self.instance_id,
                           doors[0].host, doors[0].port, refused)
            up_writer.close()
            with contextlib.suppress(TimeoutError, OSError):
                await asyncio.wait_for(asyncio.shield(answers), _DRAIN_SECONDS)
            writer.write(_forbidden(refused))
            await writer.drain()
        finally:
            answers.cancel()


def _own_network() -> int:
    return os.stat("/proc/self/ns/net").st_ino


def _peer_network(writer: asyncio.StreamWriter) -> int | None:
    """The network namespace of the process at the other end of a Unix socket (None: cannot tell)."""
    sock = writer.get_extra_info("socket")
    try:
        pid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))[0]
        return os.stat(f"/proc/{pid}/ns/net").st_ino if pid > 0 else None
    except OSError:
        return None


async def open_doors(instance_id: str, doors: list[Door]) -> list[str] | None:
    """Open ``doors`` in the network of a running confined agent; its doors' labels after, or None when it has
    no confined network (unconfined, ``network: public``, stopped).

    Raises:
        DeployError: a door is not on the loopback or could not be opened inside.
    """
    bridge = _bridges.get(instance_id)
    if bridge is None:
        return None
    await bridge.open(doors)
    return bridge.labels


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, eof: bool = True) -> None:
    """One direction until its end; the other side is half-closed after (its answer may still come)."""
    with contextlib.suppress(OSError):
        while data := await reader.read(_BUFFER):
            writer.write(data)
            await writer.drain()
        if eof and writer.can_write_eof():
            writer.write_eof()


def _forbidden(reason: str) -> bytes:
    body = f"{reason}\n".encode()
    return (b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)) + body


async def _requests(reader: asyncio.StreamReader, upstream: asyncio.StreamWriter, doors: list[Door]) -> str | None:
    """Pass the agent's requests to an MCP door one at a time while each asks for its path; the reason the
    first one that does not was refused, or None once the agent closed its end."""
    while True:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as exc:
            if exc.partial:
                return "an incomplete HTTP request"
            if upstream.can_write_eof():
                upstream.write_eof()
            return None
        except asyncio.LimitOverrunError:
            return "an HTTP request head over 64 KiB"
        framing = request_framing(head, doors)
        if isinstance(framing, str):
            return framing
        upstream.write(head)
        await _copy_body(reader, upstream, framing)


def request_framing(head: bytes, doors: list[Door]) -> int | None | str:
    """How the body of a request to MCP doors of one host:port is framed (its length, None for chunked), or why
    the request is refused: a path outside theirs, a protocol upgrade, an ambiguous length."""
    lines = head.decode("latin-1").split("\r\n")
    words = lines[0].split(" ")
    if len(words) != 3 or not words[2].startswith("HTTP/1."):
        return "not an HTTP/1.x request"
    method, target, _ = words
    path = _path_of(target)
    if method == "CONNECT" or path is None or not any(path_allowed(path, door.path or "/") for door in doors):
        paths = " or ".join(sorted({door.path or "/" for door in doors}))
        return (f"a confined agent may reach only {paths} on {doors[0].host}:{doors[0].port} (its env's MCP endpoint), "
                f"not {method} {target[:200]}")
    headers: dict[str, list[str]] = {}
    for line in lines[1:]:
        if not line:
            continue
        if line[0] in " \t" or ":" not in line:
            return "a malformed HTTP header"
        name, value = line.split(":", 1)
        headers.setdefault(name.strip().lower(), []).append(value.strip())
    if "upgrade" in headers:
        return "a protocol upgrade (only HTTP requests reach an env's MCP endpoint)"
    lengths, codings = headers.get("content-length", []), headers.get("transfer-encoding", [])
    if codings and lengths:
        return "both Content-Length and Transfer-Encoding"
    if codings:
        return None if [c.lower() for c in codings] == ["chunked"] else "a transfer coding other than chunked"
    if len(set(lengths)) > 1 or (lengths and not lengths[0].isdigit()):
        return "an ambiguous Content-Length"
    return int(lengths[0]) if lengths else 0


def _path_of(target: str) -> str | None:
    """The path of a request target (origin or absolute form); None for the others (``*``, authority)."""
    if target.startswith("/"):
        return target.split("?", 1)[0].split("#", 1)[0]
    if "://" in target:
        return urlsplit(target).path or "/"
    return None


def path_allowed(path: str, prefix: str) -> bool:
    """Whether ``path`` is ``prefix`` or below it, as written and once percent-decoded, with no dot segment
    or backslash that a server might resolve to somewhere else."""
    if prefix in ("", "/"):
        return True
    for form in (path, unquote(path)):
        if "\\" in form or "\x00" in form or any(part in (".", "..") for part in form.split("/")):
            return False
        if form != prefix and not form.startswith(prefix.rstrip("/") + "/"):
            return False
    return True


async def _copy_body(reader: asyncio.StreamReader, upstream: asyncio.StreamWriter, framing: int | None) -> None:
    if framing is None:
        while True:
            line = await reader.readuntil(b"\r\n")
            upstream.write(line)
            size = int(line.split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while (trailer := await reader.readuntil(b"\r\n")) != b"\r\n":
                    upstream.write(trailer)
                upstream.write(b"\r\n")
                break
            upstream.write(await reader.readexactly(size + 2))
            await upstream.drain()
    else:
        left = framing
        while left > 0:
            data = await reader.read(min(left, _BUFFER))
            if not data:
                raise asyncio.IncompleteReadError(b"", left)
            upstream.write(data)
            left -= len(data)
            await upstream.drain()
    await upstream.drain()
