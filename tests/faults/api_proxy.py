"""A loopback HTTP proxy in front of the session's Prefect API that can fail requests or vanish.

``fail(method, path, times)`` answers the next ``times`` matching requests with 503 itself
(the API never sees them); ``cut()`` closes the listening socket and every open connection, as a
Prefect server that went away does. Requests are parsed only as far as needed to tell them apart
(request line, headers, a ``Content-Length`` body); everything else — responses, websocket
upgrades, chunked bodies — is piped through unchanged.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from urllib.parse import urlsplit


@dataclass
class _Rule:
    method: str
    path: str
    left: int
    retry_after: float | None


def _unavailable(retry_after: float | None) -> bytes:
    body = b'{"detail":"injected by the test"}'
    extra = b"retry-after: %g\r\n" % retry_after if retry_after is not None else b""
    return (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n%scontent-length: %d\r\n\r\n%s"
            % (extra, len(body), body))


@dataclass
class ApiProxy:
    """The proxy's controls; it runs on its own event loop in a thread."""

    upstream: tuple[str, int]
    port: int = 0
    failed: list[str] = field(default_factory=list)
    """``METHOD path`` of every request answered 503."""
    _rules: list[_Rule] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _loop: asyncio.AbstractEventLoop | None = None
    _server: asyncio.Server | None = None
    _writers: set[asyncio.StreamWriter] = field(default_factory=set)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    def fail(self, method: str, path: str, times: int, retry_after: float | None = None) -> None:
        """Answer the next ``times`` requests ``method path`` (query aside) with 503, with a
        ``Retry-After`` header when given (Prefect's client then waits that long, not 2, 4, 8 s)."""
        with self._lock:
            self._rules.append(_Rule(method.upper(), path, times, retry_after))

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()
            self.failed.clear()

    def cut(self) -> None:
        """Stop listening and drop every connection: the API is gone."""
        assert self._loop is not None
        asyncio.run_coroutine_threadsafe(self._cut(), self._loop).result(timeout=10)

    def _injected(self, method: str, path: str) -> bytes | None:
        """The 503 to answer this request with, if a rule says so."""
        with self._lock:
            for rule in self._rules:
                if rule.left > 0 and method == rule.method and path.split("?")[0] == rule.path:
                    rule.left -= 1
                    self.failed.append(f"{method} {path}")
                    return _unavailable(rule.retry_after)
        return None

    async def _cut(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for writer in list(self._writers):
            writer.close()

    async def _serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        self._writers.add(client_writer)
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            client_writer.close()
            return
        self._writers.add(up_writer)
        back = asyncio.ensure_future(_pipe(up_reader, client_writer))
        try:
            await self._requests(client_reader, client_writer, up_writer)
        except (OSError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            back.cancel()
            for writer in (client_writer, up_writer):
                writer.close()
                self._writers.discard(writer)

    async def _requests(self, reader: asyncio.StreamReader, client: asyncio.StreamWriter,
                        upstream: asyncio.StreamWriter) -> None:
        """Forward requests one by one (httpx does not pipeline), answering the injected ones itself."""
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            method, path = head.split(b" ", 2)[:2]
            headers = {k.strip().lower(): v.strip() for k, _, v in
                       (line.partition(b":") for line in head.split(b"\r\n")[1:] if line)}
            if b"transfer-encoding" in headers or b"upgrade" in headers:  # pipe the rest as it is
                upstream.write(head)
                await _pipe(reader, upstream)
                return
            body = await reader.readexactly(int(headers.get(b"content-length", b"0")))
            if (answer := self._injected(method.decode(), path.decode())) is not None:
                client.write(answer)
                await client.drain()
                continue
            upstream.write(head + body)
            await upstream.drain()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with suppress(OSError, asyncio.CancelledError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    with suppress(OSError):
        writer.close()


async def _shutdown(proxy: ApiProxy) -> None:
    await proxy._cut()
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


@contextmanager
def api_proxy(api_url: str) -> Iterator[ApiProxy]:
    """An :class:`ApiProxy` in front of ``api_url`` (``http://host:port/api``) while the block runs."""
    parts = urlsplit(api_url)
    proxy = ApiProxy(upstream=(parts.hostname or "127.0.0.1", parts.port or 80))
    loop = asyncio.new_event_loop()
    proxy._loop = loop
    started = threading.Event()

    async def start() -> None:
        proxy._server = await asyncio.start_server(proxy._serve, "127.0.0.1", 0)
        proxy.port = proxy._server.sockets[0].getsockname()[1]
        started.set()

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(start(), loop).result(timeout=10)
    try:
        yield proxy
    finally:
        asyncio.run_coroutine_threadsafe(_shutdown(proxy), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()
