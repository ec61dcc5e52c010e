"""A2A client for prompting agents: one API over A2A 1.0 and 0.3 servers.

The card is read from ``/.well-known/agent-card.json`` (else the older
``/.well-known/agent.json``) under the URL given, then at the URL's origin; relative URLs on the
card are resolved against the URL the card was found under. The card decides the dialect:

* **1.0** (a ``supportedInterfaces`` entry with protocol version 1.x): the a2a-sdk 1.x client
  (``SendMessage``, ``GetTask``, ``CancelTask``), given our own httpx client and a per-call
  timeout — never the SDK's 5 s default — and the ``A2A-Version: 1.0`` header the 1.x server
  requires per request (so the shared client's headers are left alone).
* **0.3** (AgentEnv-style agents, and 1.x servers in compatibility mode when asked to):
  raw JSON-RPC ``message/send``, ``tasks/get``, ``tasks/cancel`` over the same httpx client.
  The SDK's 0.3 transport validates strictly against its own models; agents in the wild are
  looser, so this side parses leniently.

A prompt is sent non-blocking and polled until the task is terminal (or waits for input);
past ``timeout_seconds`` the task is cancelled and :class:`PromptTimeoutError` raised. The
reply — text, state, the trailing data part's ``usage.tool_call_count`` or
``error_type/error_code/error_message``, trajectory location — comes back as an
:class:`AgentReply` whatever the dialect.

httpx and a2a errors become :class:`~prefect_agentenv.exceptions.ProtocolError` or
:class:`~prefect_agentenv.exceptions.AgentTimeoutError` here (``raise … from``); an agent
that stops accepting connections while a task runs is reported as such, naming its URL.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

import httpx
from a2a.client import A2AClientError, A2AClientTimeoutError, BaseClient, ClientCallContext, ClientConfig
from a2a.client.card_resolver import parse_agent_card
from a2a.client.transports.jsonrpc import JsonRpcTransport
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
)
from a2a.utils.constants import VERSION_HEADER
from a2a.utils.errors import JSON_RPC_ERROR_CODE_MAP, A2AError
from google.protobuf import json_format
from google.protobuf.message import Message as ProtoMessage

from prefect_agentenv.exceptions import AgentTimeoutError, ProtocolError
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.protocols.a2a_card import (
    A2A_CARD_PATH,
    LEGACY_A2A_CARD_PATH,
    A2ACard,
    A2AInterface,
    card_candidates,
)
from prefect_agentenv.protocols.a2a_reply import (
    TERMINAL_STATES,
    WAITING_STATES,
    AgentErrorInfo,
    AgentReply,
    ProtocolVersion,
    TaskStateName,
    reply_from_result,
)
from prefect_agentenv.protocols.tls import ssl_context

__all__ = [
    "A2A_CARD_PATH", "LEGACY_A2A_CARD_PATH", "TERMINAL_STATES", "WAITING_STATES", "A2ACard", "A2AClient",
    "A2AInterface", "AgentErrorInfo", "AgentReply", "PromptTimeoutError", "ProtocolVersion", "TaskStateName",
    "as_protocol_error", "fetch_card", "reply_from_result",
]

logger = logging.getLogger(__name__)

DEFAULT_REQUEST_TIMEOUT = 30.0
"""Bound on one HTTP exchange with an agent; a prompt's own bound is ``timeout_seconds``."""
DEFAULT_CANCEL_TIMEOUT = 5.0
"""How long a cancellation after a timeout may take before we give up on it."""
_FIRST_POLL_SECONDS = 0.02
"""First pause before polling a task; agents on loopback often finish within tens of milliseconds."""
_CONNECTION_LOST = (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


class PromptTimeoutError(AgentTimeoutError):
    """A prompt did not finish in time; the task was cancelled.

    Attributes:
        reply: the task as last seen, with ``is_timeout`` set.
    """

    def __init__(self, message: str, *, reply: AgentReply) -> None:
        super().__init__(message)
        self.reply = reply


async def fetch_card(url: str, *, http: httpx.AsyncClient, timeout: float = DEFAULT_REQUEST_TIMEOUT) -> A2ACard:
    """Fetch and read an agent's card.

    Args:
        url: the agent's base URL, its JSON-RPC URL, or the card's own URL.

    Raises:
        ProtocolError: the agent cannot be reached, or no card answers at any candidate path.
        AgentTimeoutError: the agent did not answer in time.
    """
    missing: list[str] = []
    for base, card_url in card_candidates(url):
        try:
            response = await http.get(card_url, timeout=timeout)
        except httpx.HTTPError as exc:
            raise as_protocol_error(exc, card_url, "the card request") from exc
        if response.status_code in (404, 405):
            missing.append(card_url)
            continue
        if response.status_code != 200:
            raise ProtocolError(f"{card_url} answered HTTP {response.status_code}", url=card_url,
                                code=response.status_code)
        try:
            raw = response.json()
        except ValueError as exc:
            raise ProtocolError(f"{card_url} did not answer JSON", url=card_url) from exc
        if not isinstance(raw, dict):
            raise ProtocolError(f"{card_url} answered a card that is not a JSON object", url=card_url)
        return A2ACard.from_raw(raw, base_url=base, card_url=card_url)
    raise ProtocolError(f"no A2A agent card found for {url} (tried {', '.join(missing)})", url=url, code=404)


class _Wire(Protocol):
    """One A2A dialect: each call returns a Task or Message as that dialect's JSON."""

    url: str
    version: ProtocolVersion

    async def send(self, text: str, context_id: str | None, task_id: str | None) -> JsonObject: ...

    async def get(self, task_id: str) -> JsonObject: ...

    async def cancel(self, task_id: str, timeout: float) -> JsonObject: ...


class _SdkWire:
    """A2A 1.0 through the a2a-sdk client, on our httpx client, with our timeouts."""

    version: ProtocolVersion = "1.0"

    def __init__(self, card: A2ACard, url: str, http: httpx.AsyncClient, timeout: float) -> None:
        self.url = url
        self.timeout = timeout
        try:
            sdk_card = parse_agent_card(copy.deepcopy(card.raw))
        except json_format.ParseError as exc:
            raise ProtocolError(f"the agent card at {card.card_url} is not a valid A2A 1.0 card: {exc}",
                                url=card.card_url) from exc
        # The transport is built directly (not through ClientFactory) because the factory
        # writes an A2A-Version header into the shared httpx client; it goes per call instead.
        transport = JsonRpcTransport(http, sdk_card, url, is_shared_httpx=True)
        self._client = BaseClient(sdk_card, ClientConfig(streaming=False, polling=True, httpx_client=http),
                                  transport, [])

    def _context(self, timeout: float | None = None) -> ClientCallContext:
        return ClientCallContext(timeout=timeout or self.timeout, service_parameters={VERSION_HEADER: "1.0"})

    async def send(self, text: str, context_id: str | None, task_id: str | None) -> JsonObject:
        message = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=[Part(text=text)],
                          context_id=context_id or "", task_id=task_id or "")
        request = SendMessageRequest(message=message,
                                     configuration=SendMessageConfiguration(return_immediately=True))
        with _boundary(self.url, "SendMessage"):
            async for event in self._client.send_message(request, context=self._context()):
                if event.HasField("task"):
                    return _as_json(event.task)
                if event.HasField("message"):
                    return {"kind": "message", **_as_json(event.message)}
        raise ProtocolError(f"{self.url} answered SendMessage with neither a task nor a message", url=self.url)

    async def get(self, task_id: str) -> JsonObject:
        with _boundary(self.url, f"GetTask {task_id}"):
            task = await self._client.get_task(GetTaskRequest(id=task_id), context=self._context())
        return _as_json(task)

    async def cancel(self, task_id: str, timeout: float) -> JsonObject:
        with _boundary(self.url, f"CancelTask {task_id}"):
            task = await self._client.cancel_task(CancelTaskRequest(id=task_id), context=self._context(timeout))
        return _as_json(task)


def _as_json(message: ProtoMessage) -> JsonObject:
    """A protobuf message as the JSON the 1.0 wire carries (camelCase names)."""
    return dict(json_format.MessageToDict(message))


class _LegacyWire:
    """A2A 0.3 as raw JSON-RPC: lenient about what AgentEnv-style agents send back."""

    version: ProtocolVersion = "0.3"

    def __init__(self, url: str, http: httpx.AsyncClient, timeout: float) -> None:
        self.url = url
        self.http = http
        self.timeout = timeout

    async def send(self, text: str, context_id: str | None, task_id: str | None) -> JsonObject:
        message: JsonObject = {"kind": "message", "messageId": uuid.uuid4().hex, "role": "user",
                                   "parts": [{"kind": "text", "text": text}]}
        if context_id:
            message["contextId"] = context_id
        if task_id:
            message["taskId"] = task_id
        params: JsonObject = {"message": message, "configuration": {"blocking": False,
                                                        "acceptedOutputModes": ["text/plain", "application/json"]}}
        return await self._call("message/send", params)

    async def get(self, task_id: str) -> JsonObject:
        return await self._call("tasks/get", {"id": task_id})

    async def cancel(self, task_id: str, timeout: float) -> JsonObject:
        return await self._call("tasks/cancel", {"id": task_id}, timeout=timeout)

    async def _call(self, method: str, params: JsonObject, *, timeout: float | None = None) -> JsonObject:
        body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": method, "params": params}
        with _boundary(self.url, method):
            response = await self.http.post(self.url, json=body, headers={VERSION_HEADER: "0.3"},
                                            timeout=timeout or self.timeout)
            response.raise_for_status()
            payload = response.json()
        if not isinstance(payload, dict):
            raise ProtocolError(f"{self.url} answered {method} with something other than a JSON-RPC object",
                                url=self.url)
        error = payload.get("error")
        if error:
            code = error.get("code") if isinstance(error, dict) else None
            text = error.get("message", "") if isinstance(error, dict) else str(error)
            raise ProtocolError(f"{self.url} answered {method} with [{code}] {text}", url=self.url, code=code)
        result = payload.get("result")
        if not isinstance(result, dict):
            raise ProtocolError(f"{self.url} answered {method} without a task or message", url=self.url)
        return result


class A2AClient:
    """Prompts one agent over A2A 1.0 or 0.3 and returns typed replies.

    Args:
        url: the agent's base URL (or its JSON-RPC URL, or its card's URL).
        http: the run's shared httpx client; a private one is made (and closed) when omitted.
        request_timeout: bound on each HTTP exchange, in seconds.
        protocol: ``auto`` follows the card (1.0 preferred); ``1.0``/``0.3`` force a dialect.

    Example:
        ```python
        async with A2AClient(agent.a2a_url, http=shared) as client:
            reply = await client.send("Reply to Dana.", timeout_seconds=600)
            print(reply.text, reply.tool_call_count, reply.error)
        ```
    """

    def __init__(self, url: str, *, http: httpx.AsyncClient | None = None,
                 request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
                 protocol: ProtocolVersion | Literal["auto"] = "auto") -> None:
        self.url = url
        self.request_timeout = request_timeout
        self.protocol = protocol
        self._own_http = http is None
        self.http = http if http is not None else httpx.AsyncClient(timeout=request_timeout, verify=ssl_context())
        self._card: A2ACard | None = None
        self._wire: _Wire | None = None
        self._unfinished: set[str] = set()
        self._unanswered = 0

    @property
    def may_be_working(self) -> bool:
        """The agent may still be working on a prompt this client sent: a task last seen neither
        over nor waiting for input, or a send whose answer never came (cut by a timeout or a
        cancelled run). A warm pool does not hand such an agent to the next task run."""
        return bool(self._unfinished) or self._unanswered > 0

    def _saw(self, reply: AgentReply) -> AgentReply:
        if reply.task_id is not None:
            if reply.done:
                self._unfinished.discard(reply.task_id)
            else:
                self._unfinished.add(reply.task_id)
        return reply

    async def __aenter__(self) -> A2AClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the httpx client if this client made it."""
        if self._own_http:
            await self.http.aclose()

    async def card(self) -> A2ACard:
        """The agent's card, fetched once."""
        if self._card is None:
            self._card = await fetch_card(self.url, http=self.http, timeout=self.request_timeout)
        return self._card

    async def _connect(self) -> _Wire:
        if self._wire is None:
            card = await self.card()
            rpc_url, version = card.interface(self.protocol)
            self._wire = (_SdkWire(card, rpc_url, self.http, self.request_timeout) if version == "1.0"
                          else _LegacyWire(rpc_url, self.http, self.request_timeout))
            logger.debug("A2A %s at %s", version, rpc_url)
        return self._wire

    async def start(self, text: str, *, context_id: str | None = None, task_id: str | None = None) -> AgentReply:
        """Send a prompt without waiting for the work; the task as first seen (or the reply)."""
        wire = await self._connect()
        self._unanswered += 1  # left counted if the send fails or is cut: the agent may have started
        reply = reply_from_result(await wire.send(text, context_id, task_id), wire.version)
        self._unanswered -= 1
        return self._saw(reply)

    async def get_task(self, task_id: str) -> AgentReply:
        """The task as it is now."""
        wire = await self._connect()
        return self._saw(reply_from_result(await wire.get(task_id), wire.version))

    async def cancel_task(self, task_id: str, *, timeout: float | None = None) -> AgentReply:
        """Ask the agent to cancel a task; the task as the agent then reports it."""
        wire = await self._connect()
        return self._saw(reply_from_result(await wire.cancel(task_id, timeout or self.request_timeout), wire.version))

    async def send(self, text: str, *, context_id: str | None = None, task_id: str | None = None,
                   timeout_seconds: float = 1800.0, poll_interval_seconds: float = 0.5,
                   cancel_timeout_seconds: float = DEFAULT_CANCEL_TIMEOUT,
                   on_start: Callable[[AgentReply], object] | None = None) -> AgentReply:
        """Send a prompt and poll until the task is terminal or waits for input.

        Args:
            context_id: continue this conversation (the previous reply's ``context_id``).
            task_id: continue this task (one that is waiting for input).
            timeout_seconds: bound on the whole exchange; the task is cancelled past it.
            poll_interval_seconds: the longest pause between two polls. The first poll comes
                after 20 ms and the pause grows by half each time up to this, so a quick answer
                is seen quickly and a long task is not polled more than before.
            cancel_timeout_seconds: bound on the cancellation sent after a timeout.
            on_start: called with the task as first seen, before polling (its ids let a caller
                send a message into the running task).

        Raises:
            PromptTimeoutError: the agent did not finish in time; ``.reply`` is the task as last seen.
            ProtocolError: the agent answered wrongly, or stopped answering (its process died).
        """
        seen = _Progress()
        try:
            async with asyncio.timeout(timeout_seconds):
                seen.reply = await self.start(text, context_id=context_id, task_id=task_id)
                if on_start is not None:
                    on_start(seen.reply)
                return await self._poll(seen, poll_interval_seconds)
        except TimeoutError as exc:
            raise await self._timed_out(seen.reply, timeout_seconds, cancel_timeout_seconds) from exc

    async def _poll(self, seen: _Progress, interval: float) -> AgentReply:
        reply = seen.reply
        assert reply is not None
        delay = min(_FIRST_POLL_SECONDS, interval)
        while not reply.done:
            if reply.task_id is None:
                raise ProtocolError(f"{self.url} answered with a {reply.state} task that has no id", url=self.url)
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, interval)
            try:
                reply = await self.get_task(reply.task_id)
            except ProtocolError as exc:
                if _connection_lost(exc):
                    raise ProtocolError(
                        f"the agent at {exc.url or self.url} stopped answering while its task {reply.task_id} "
                        f"was {reply.state} ({_root(exc)!r}); its process may have died", url=exc.url or self.url,
                    ) from exc
                raise
            seen.reply = reply
        return reply

    async def _timed_out(self, last: AgentReply | None, timeout: float, cancel_timeout: float) -> PromptTimeoutError:
        """Cancel the task (best effort, bounded) and build the error carrying what was seen."""
        reply = last or AgentReply()
        outcome = "no task id was known to cancel"
        if reply.task_id is not None:
            try:
                async with asyncio.timeout(cancel_timeout):
                    cancelled = await self.cancel_task(reply.task_id, timeout=cancel_timeout)
                reply = reply.model_copy(update={"state": cancelled.state})
                outcome = f"the task was cancelled (now {cancelled.state})"
            except (ProtocolError, TimeoutError) as exc:
                # The timeout is the error the caller needs; a failed cancel only adds to it.
                logger.warning("could not cancel task %s at %s: %s", reply.task_id, self.url, exc)
                outcome = f"cancelling the task failed: {exc}"
        reply = reply.model_copy(update={"is_timeout": True})
        return PromptTimeoutError(f"the agent at {self.url} did not finish within {timeout:g}s "
                                  f"(task {reply.task_id} was {last.state if last else 'not started'}); "
                                  f"{outcome}", reply=reply)


@dataclass
class _Progress:
    """The task as last seen, kept outside the poll so a timeout can still report it."""

    reply: AgentReply | None = None


class _boundary:
    """Map httpx and a2a errors raised inside to ProtocolError / AgentTimeoutError."""

    def __init__(self, url: str, doing: str) -> None:
        self.url = url
        self.doing = doing

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if exc is not None and isinstance(exc, _FOREIGN):
            raise as_protocol_error(exc, self.url, self.doing) from exc


_FOREIGN: tuple[type[BaseException], ...] = (A2AError, httpx.HTTPError, httpx.InvalidURL, json_format.ParseError,
                                              ValueError, KeyError)
"""What the a2a-sdk client and httpx raise (the SDK also lets ValueError/KeyError out on odd answers)."""


def as_protocol_error(exc: BaseException, url: str, doing: str) -> ProtocolError | AgentTimeoutError:
    """The package error for an httpx or a2a error met while ``doing`` something with ``url``.

    The a2a-sdk wraps transport failures in ``A2AClientError``; it is looked through to its
    cause, so a refused connection or a timeout is named as such.
    """
    leaf = exc.__cause__ if isinstance(exc, A2AClientError) and exc.__cause__ is not None else exc
    if isinstance(leaf, httpx.TimeoutException | A2AClientTimeoutError):
        return AgentTimeoutError(f"{url} did not answer {doing} in time ({type(leaf).__name__})")
    if isinstance(leaf, httpx.ConnectError):
        return ProtocolError(f"could not connect to the agent at {url} for {doing}: {leaf}", url=url)
    if isinstance(leaf, httpx.HTTPStatusError):
        status = leaf.response.status_code
        return ProtocolError(f"{url} answered {doing} with HTTP {status}", url=url, code=status)
    if isinstance(leaf, httpx.HTTPError):
        return ProtocolError(f"the connection to the agent at {url} broke during {doing}: {leaf!r}", url=url)
    if isinstance(leaf, A2AError) and not isinstance(leaf, A2AClientError):
        code = JSON_RPC_ERROR_CODE_MAP.get(type(leaf))
        return ProtocolError(f"{url} answered {doing} with [{code}] {leaf.message}", url=url, code=code)
    return ProtocolError(f"{url} answered {doing} with something unexpected: {exc}", url=url)


def _causes(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _connection_lost(exc: BaseException) -> bool:
    return any(isinstance(cause, _CONNECTION_LOST) for cause in _causes(exc))


def _root(exc: BaseException) -> BaseException:
    return _causes(exc)[-1]
