"""The env wire protocol, client side: the card, the JSON-RPC data plane, clock and triggers.

An env answers ``GET /.well-known/agent-env.json`` with its card, serves a JSON-RPC 2.0
endpoint (the card's ``url``, usually ``/agentenv``) with ``data/reset``, ``data/add`` and
``data/get``, and its tools over MCP (an ``additionalInterfaces`` entry with transport
``mcp``). Clock and triggers are extensions the card declares under
``capabilities.extensions``; their ``params`` name the ``endpoint`` and ``methods``.

Every foreign error (httpx, malformed answers) is mapped here to
:class:`~prefect_agentenv.exceptions.ProtocolError` and its subclasses, so steps never see
httpx types. A card that lists ``operations: []`` makes data-plane calls fail at once with
:class:`~prefect_agentenv.exceptions.UnsupportedOperationError` instead of being attempted.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, Literal
from urllib.parse import urljoin

import httpx
from pydantic import AfterValidator, Field, TypeAdapter, ValidationError

from prefect_agentenv.exceptions import EnvRpcError, ProtocolError, UnsupportedOperationError
from prefect_agentenv.jsontypes import JsonObject, JsonValue
from prefect_agentenv.protocols import jsonrpc
from prefect_agentenv.protocols.parts import (
    DataPart,
    FileContent,
    FilePart,
    Part,
    TextPart,
    parse_parts,
    parts_to_documents,
)
from prefect_agentenv.protocols.wire import WireModel, first_problem, unusable_reply

__all__ = [
    "CARD_PATH", "CLOCK_EXTENSION", "DATA_OPERATIONS", "TRIGGERS_EXTENSION", "ClockState", "DataPart",
    "EnvCapabilities", "EnvCard", "EnvClient", "EnvExtension", "EnvInterface", "FileContent", "FilePart", "Part",
    "TextPart", "Trigger", "UtcDatetime", "parse_parts", "parts_to_documents",
]

CARD_PATH = ".well-known/agent-env.json"
ENV_PROTOCOL_VERSION = "1.0"
DATA_OPERATIONS = ("data/reset", "data/add", "data/get")
CLOCK_EXTENSION = "urn:agentenv:clock/v1"
TRIGGERS_EXTENSION = "urn:agentenv:triggers/v1"
DISABLE_TOOL_EXTENSION = "urn:agentenv:disable-tool/v1"
ENABLE_TOOL_EXTENSION = "urn:agentenv:enable-tool/v1"
CLOCK_METHODS = ("clock/get", "clock/set", "clock/advance")
TRIGGER_METHODS = ("triggers/register", "triggers/list")


def _as_utc(value: datetime) -> datetime:
    """Naive times are read as UTC so that every instant on the wire is unambiguous."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


UtcDatetime = Annotated[datetime, AfterValidator(_as_utc)]
"""An instant in ISO 8601; a time without an offset is taken as UTC."""


_Wire = WireModel
"""Wire models keep unknown members, read ``null`` as absent and accept camelCase or snake_case."""


# --- card ------------------------------------------------------------------------------------


class EnvInterface(_Wire):
    """Another way to reach the env, e.g. ``{url: "/mcp", transport: "mcp"}``."""

    url: str
    transport: str


class EnvExtension(_Wire):
    """An extension the env offers; ``params`` tell the ``endpoint`` and ``methods``."""

    uri: str
    description: str | None = None
    required: bool = False
    params: JsonObject = Field(default_factory=dict)


class EnvCapabilities(_Wire):
    """What the env offers.

    ``operations`` lists the data-plane methods; ``None`` (member missing) is a legacy card
    and means all of them, ``[]`` means no data plane at all.
    """

    tools: list[str | JsonObject] | bool | None = None
    operations: list[str] | None = None
    extensions: list[EnvExtension] = Field(default_factory=list)


class EnvCard(_Wire):
    """The env's card, served at ``/.well-known/agent-env.json``."""

    name: str
    description: str | None = None
    version: str | None = None
    protocol_version: str | None = None
    url: str = "/agentenv"
    additional_interfaces: list[EnvInterface] = Field(default_factory=list)
    capabilities: EnvCapabilities = Field(default_factory=EnvCapabilities)

    def resolved(self, base_url: str) -> EnvCard:
        """A copy whose urls (data plane, interfaces, extension endpoints) are absolute."""
        extensions = [_with_absolute_endpoint(ext, base_url) for ext in self.capabilities.extensions]
        return self.model_copy(update={
            "url": urljoin(base_url, self.url),
            "additional_interfaces": [
                i.model_copy(update={"url": urljoin(base_url, i.url)}) for i in self.additional_interfaces
            ],
            "capabilities": self.capabilities.model_copy(update={"extensions": extensions}),
        })

    @property
    def tool_names(self) -> list[str]:
        """Names of the tools the card lists (entries may be names or tool objects)."""
        tools = self.capabilities.tools
        if not isinstance(tools, list):
            return []
        return [t if isinstance(t, str) else str(t.get("name", "")) for t in tools]

    @property
    def mcp_url(self) -> str | None:
        """The MCP endpoint, if the card lists one."""
        return next((i.url for i in self.additional_interfaces if i.transport.lower() == "mcp"), None)

    @property
    def has_data_plane(self) -> bool:
        """False only when the card explicitly lists no operations."""
        return self.capabilities.operations is None or bool(self.capabilities.operations)

    def supports(self, operation: str) -> bool:
        """Whether the env offers a data-plane method (``data/get``) or an extension (by URI)."""
        if operation.startswith("urn:"):
            return self.extension(operation) is not None
        operations = self.capabilities.operations
        return operations is None or operation in operations

    def extension(self, uri: str) -> EnvExtension | None:
        """The declared extension with this URI, if any."""
        return next((e for e in self.capabilities.extensions if e.uri == uri), None)


# --- clock and triggers ----------------------------------------------------------------------


class Trigger(_Wire):
    """A timed event: when the env's clock reaches ``at``, the env performs ``action`` with ``data``."""

    id: str | None = None
    at: UtcDatetime
    action: str = Field(min_length=1)
    data: JsonObject = Field(default_factory=dict)
    status: Literal["pending", "fired", "failed"] | None = None
    error: str | None = None


class ClockState(_Wire):
    """The env's virtual clock after a clock call, and the triggers that call made fire."""

    time: UtcDatetime
    frozen: bool = False
    fired: list[Trigger] = Field(default_factory=list)


_triggers = TypeAdapter(list[Trigger])


# --- client ----------------------------------------------------------------------------------


class EnvClient:
    """Talks to one env instance over its card and JSON-RPC endpoint.

    Args:
        base_url: root of the instance, e.g. ``http://127.0.0.1:8123/``; relative card urls
            are resolved against it.
        http: the run's shared client; its timeouts apply unless ``timeout`` is given.
        timeout: per-request timeout overriding the client's.
        name: how errors name the env (its env id); the card's name once read, else "the env".

    Example:
        ```python
        async with httpx.AsyncClient() as http:
            env = EnvClient("http://127.0.0.1:8123", http)
            await env.data_reset()
            await env.data_add([DataPart(data={"emails": [...]})])
            state = await env.export_state()
        ```
    """

    def __init__(self, base_url: str, http: httpx.AsyncClient, *, timeout: float | None = None,
                 name: str | None = None) -> None:
        self.base_url = base_url if base_url.endswith("/") else base_url + "/"
        self.name = name
        self._http = http
        self._timeout: Any = httpx.USE_CLIENT_DEFAULT if timeout is None else timeout
        self._card: EnvCard | None = None
        self.card_json: Any = None
        """The card as served (JSON), once :meth:`card` has read it."""

    # card

    async def card(self, *, refresh: bool = False) -> EnvCard:
        """The env's card with absolute urls; fetched once, then cached."""
        if self._card is None or refresh:
            url = urljoin(self.base_url, CARD_PATH)
            response = await self._send("GET", url, what="the card")
            try:
                self.card_json = response.json()
                self._card = EnvCard.model_validate(self.card_json).resolved(self.base_url)
            except ValueError as exc:  # pydantic's ValidationError is one, and so is a body that is not JSON
                if not isinstance(exc, ValidationError):
                    raise ProtocolError(f"{self.peer} at {url} answered its card with something other than JSON",
                                        url=url) from exc
                raise unusable_reply(self.peer, url, "an env card", exc) from exc
        return self._card

    @property
    def peer(self) -> str:
        """How errors name this env: ``env 'mail'``."""
        name = self.name or (self._card.name if self._card is not None else None)
        return f"env {name!r}" if name else "the env"

    async def supports(self, operation: str) -> bool:
        """Whether the card offers a data-plane method (``data/get``) or an extension URI.

        A server without a card (HTTP 404: a plain MCP server) offers neither.
        """
        try:
            card = await self._card_offering(operation)
        except UnsupportedOperationError:
            return False
        return card.supports(operation)

    # data plane

    async def data_reset(self) -> None:
        """Empty the env's data (``data/reset``)."""
        await self._data_call("data/reset", {})

    async def data_add(self, parts: Sequence[Part | JsonObject]) -> None:
        """Load parts into the env (``data/add``); dict parts are validated first."""
        try:
            wire: list[JsonValue] = [p.to_wire() for p in parse_parts(parts)]
        except ValueError as exc:
            raise ProtocolError(f"cannot send malformed parts to data/add: {exc}", url=self.base_url) from exc
        await self._data_call("data/add", {"parts": wire})

    async def data_get(self) -> list[Part]:
        """Export the env's data (``data/get``) as parts."""
        result = await self._data_call("data/get", {})
        raw = result.get("parts") if isinstance(result, dict) else None
        if not isinstance(raw, list | None):
            raise ProtocolError(f"{self.peer} at {self.base_url} sent a data/get result we cannot use: field parts: "
                                f"expected a list, got {type(raw).__name__}", url=self.base_url)
        try:
            return parse_parts(raw or [])  # no parts (or null) is an env with no data
        except ValidationError as exc:
            raise unusable_reply(self.peer, self.base_url, "a data/get result without a valid 'parts' list",
                                 exc) from exc

    async def export_state(self) -> JsonObject:
        """The env's exported data parts merged into one ``{resource: value}`` mapping."""
        state: JsonObject = {}
        for part in await self.data_get():
            if isinstance(part, DataPart):
                state.update(part.data)
        return state

    # extensions

    async def clock_get(self) -> ClockState:
        """The env's current virtual time."""
        result = await self._extension_call(CLOCK_EXTENSION, "clock/get", {})
        return _clock_of(result, self.peer, self.base_url)

    async def clock_set(self, time: datetime, *, frozen: bool | None = None) -> ClockState:
        """Set the virtual clock; triggers now due fire and are reported in ``fired``."""
        params: JsonObject = {"time": _as_utc(time).isoformat()}
        if frozen is not None:
            params["frozen"] = frozen
        result = await self._extension_call(CLOCK_EXTENSION, "clock/set", params)
        return _clock_of(result, self.peer, self.base_url)

    async def clock_advance(self, seconds: float) -> ClockState:
        """Move the virtual clock forward; triggers now due fire and are reported in ``fired``."""
        result = await self._extension_call(CLOCK_EXTENSION, "clock/advance", {"seconds": seconds})
        return _clock_of(result, self.peer, self.base_url)

    async def set_tool_access(self, action: str, role: str, tools: Sequence[str]) -> JsonObject:
        """Disable or enable tools for a role (``urn:agentenv:disable-tool/v1`` / ``enable-tool/v1``).

        The env answers with the role's state after the change, ``{disabled, allowed}`` as it says it.
        """
        uri = DISABLE_TOOL_EXTENSION if action == "disable" else ENABLE_TOOL_EXTENSION
        result = await self._extension_call(uri, action, {"role": role, "tools": [*tools]})
        return result if isinstance(result, dict) else {"result": result}

    async def register_triggers(self, triggers: Sequence[Trigger | JsonObject]) -> list[Trigger]:
        """Register timed events; the env answers with them as stored (ids, status)."""
        try:
            wire: list[JsonValue] = [(t if isinstance(t, Trigger) else Trigger.model_validate(t)).to_wire()
                                     for t in triggers]
        except ValidationError as exc:
            raise ProtocolError(f"cannot register malformed triggers: {_first_error(exc)}",
                                url=self.base_url) from exc
        result = await self._extension_call(TRIGGERS_EXTENSION, "triggers/register", {"triggers": wire})
        return _triggers_of(result, self.peer, self.base_url)

    async def list_triggers(self) -> list[Trigger]:
        """Every trigger the env holds, with its status."""
        result = await self._extension_call(TRIGGERS_EXTENSION, "triggers/list", {})
        return _triggers_of(result, self.peer, self.base_url)

    # raw JSON-RPC

    async def call(self, method: str, params: JsonObject | None = None, *, endpoint: str | None = None) -> Any:
        """Call any JSON-RPC method on the env and return its ``result``.

        Raises:
            EnvRpcError: the env answered with a JSON-RPC error.
            ProtocolError: the env could not be reached or did not answer JSON-RPC.
        """
        url = endpoint or (await self.card()).url
        body = jsonrpc.request(method, params)
        response = await self._send("POST", url, what=method, json=body)
        try:
            answer = jsonrpc.Response.model_validate_json(response.content)
        except ValidationError as exc:
            raise ProtocolError(f"{url} answered {method} with something that is not JSON-RPC",
                                url=url) from exc
        if answer.error is not None:
            error = answer.error
            named = error.data.get("code") if isinstance(error.data, dict) else None
            detail = " ".join(p for p in (error.message, f"({named})" if named else "") if p)
            raise EnvRpcError(f"{self.peer}: {method} failed on {url}: [{error.code}] {detail}",
                              url=url, code=error.code, data=error.data, method=method)
        if answer.id is not None and str(answer.id) != str(body["id"]):  # some peers echo ids as strings
            raise ProtocolError(f"{url} answered {method} with id {answer.id!r}, expected {body['id']!r}", url=url)
        return answer.result

    # internals

    async def _card_offering(self, operation: str) -> EnvCard:
        """The card; a server without one (a plain MCP server) offers no data plane or extension."""
        try:
            return await self.card()
        except ProtocolError as exc:
            if exc.code != 404:
                raise
            raise UnsupportedOperationError(
                f"{self.base_url} serves no env card (HTTP 404), so it cannot do {operation}: "
                "it looks like a plain MCP server", url=exc.url, operation=operation,
            ) from exc

    async def _data_call(self, method: str, params: JsonObject) -> Any:
        card = await self._card_offering(method)
        if not card.supports(method):
            reason = "has no data plane (operations: [])" if not card.has_data_plane else "does not offer it"
            raise UnsupportedOperationError(
                f"env {card.name!r} cannot do {method}: its card {reason}", url=card.url, operation=method
            )
        return await self.call(method, params, endpoint=card.url)

    async def _extension_call(self, uri: str, method: str, params: JsonObject) -> Any:
        card = await self._card_offering(method)
        extension = card.extension(uri)
        if extension is None:
            raise UnsupportedOperationError(
                f"env {card.name!r} cannot do {method}: its card does not declare {uri}", url=card.url, operation=uri
            )
        methods = extension.params.get("methods")
        if isinstance(methods, list | dict) and method not in methods:
            raise UnsupportedOperationError(
                f"env {card.name!r} declares {uri} without {method}", url=card.url, operation=method
            )
        endpoint = extension.params.get("endpoint")
        if isinstance(methods, dict):
            # The AgentEnv SDK's shape: each method is a REST route, {method: verb, endpoint?}.
            declared = methods[method]
            spec = declared if isinstance(declared, dict) else {}
            route = spec.get("endpoint") or endpoint
            if not isinstance(route, str) or not route:
                raise ProtocolError(f"env {card.name!r} declares {uri} {method} without an endpoint", url=card.url)
            return await self._rest_call(str(spec.get("method") or "POST").upper(), route, params, what=method)
        return await self.call(method, params, endpoint=endpoint if isinstance(endpoint, str) else card.url)

    async def _rest_call(self, verb: str, route: str, params: JsonObject, *, what: str) -> Any:
        """One REST extension call: the params as the JSON body (the query string for GET)."""
        url = urljoin(self.base_url.rstrip("/") + "/", route.lstrip("/")) if not route.startswith("http") else route
        if verb == "GET":
            url = str(httpx.URL(url, params={k: str(v) for k, v in params.items()}))
        response = await self._send(verb, url, what=what, json=None if verb == "GET" else params)
        try:
            return response.json() if response.content else {}
        except ValueError as exc:
            raise ProtocolError(f"{url} answered {what} with something other than JSON", url=url) from exc

    async def _send(self, verb: str, url: str, *, what: str, json: Any = None) -> httpx.Response:
        """One HTTP exchange; transport failures and non-200 answers become ``ProtocolError``."""
        try:
            response = await self._http.request(verb, url, json=json, timeout=self._timeout)
        except httpx.TimeoutException as exc:
            raise ProtocolError(f"{url} did not answer {what} in time ({type(exc).__name__})", url=url) from exc
        except httpx.HTTPError as exc:
            raise ProtocolError(f"could not reach {url} for {what}: {exc!r}", url=url) from exc
        if response.status_code != 200:
            raise ProtocolError(
                f"{url} answered {what} with HTTP {response.status_code}: {response.text[:200]}",
                url=url, code=response.status_code,
            )
        return response


def _with_absolute_endpoint(extension: EnvExtension, base_url: str) -> EnvExtension:
    endpoint = extension.params.get("endpoint")
    if not isinstance(endpoint, str):
        return extension
    return extension.model_copy(update={"params": {**extension.params, "endpoint": urljoin(base_url, endpoint)}})


def _clock_of(result: Any, peer: str, url: str) -> ClockState:
    try:
        return ClockState.model_validate(result)
    except ValidationError as exc:
        raise unusable_reply(peer, url, "a clock reply without a valid clock state", exc) from exc


def _triggers_of(result: Any, peer: str, url: str) -> list[Trigger]:
    raw = result.get("triggers") if isinstance(result, dict) else None
    try:
        return _triggers.validate_python(raw)
    except ValidationError as exc:
        raise unusable_reply(peer, url, "a triggers reply without a valid 'triggers' list", exc) from exc


_first_error = first_problem
