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

import base64
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, Literal
from urllib.parse import urljoin

import httpx
from pydantic import AfterValidator, Discriminator, Field, Tag, TypeAdapter, ValidationError, model_validator

from prefect_agentenv.exceptions import EnvRpcError, ProtocolError, UnsupportedOperationError
from prefect_agentenv.protocols import jsonrpc
from prefect_agentenv.protocols.wire import WireModel, first_problem, unusable_reply

CARD_PATH = ".well-known/agent-env.json"
ENV_PROTOCOL_VERSION = "1.0"
DATA_OPERATIONS = ("data/reset", "data/add", "data/get")
CLOCK_EXTENSION = "urn:agentenv:clock/v1"
TRIGGERS_EXTENSION = "urn:agentenv:triggers/v1"
CLOCK_METHODS = ("clock/get", "clock/set", "clock/advance")
TRIGGER_METHODS = ("triggers/register", "triggers/list")


def _as_utc(value: datetime) -> datetime:
    """Naive times are read as UTC so that every instant on the wire is unambiguous."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


UtcDatetime = Annotated[datetime, AfterValidator(_as_utc)]
"""An instant in ISO 8601; a time without an offset is taken as UTC."""


_Wire = WireModel
"""Wire models keep unknown members, read ``null`` as absent and accept camelCase or snake_case."""


# --- parts -----------------------------------------------------------------------------------


class DataPart(_Wire):
    """Structured data, e.g. ``{"emails": [...]}``."""

    kind: Literal["data"] = "data"
    data: dict[str, Any]
    metadata: dict[str, Any] | None = None


class TextPart(_Wire):
    """Plain text."""

    kind: Literal["text"] = "text"
    text: str
    metadata: dict[str, Any] | None = None


class FileContent(_Wire):
    """A file carried inline (base64 ``bytes``) or by reference (``uri``)."""

    bytes_: str | None = Field(default=None, alias="bytes")
    uri: str | None = None
    mime_type: str | None = None
    name: str | None = None

    @model_validator(mode="after")
    def _bytes_or_uri(self) -> FileContent:
        if (self.bytes_ is None) == (self.uri is None):
            raise ValueError("a file carries exactly one of bytes and uri")
        return self

    def content(self) -> bytes:
        """The decoded bytes of an inline file.

        Raises:
            ValueError: the file is a reference (``uri``) or its bytes are not base64.
        """
        if self.bytes_ is None:
            raise ValueError(f"file {self.name or self.uri!r} is a reference, not inline bytes")
        return base64.b64decode(self.bytes_, validate=True)


class FilePart(_Wire):
    """A file, e.g. an environment artifact's JSON document."""

    kind: Literal["file"] = "file"
    file: FileContent
    metadata: dict[str, Any] | None = None

    @classmethod
    def from_bytes(cls, content: bytes, *, name: str | None = None, mime_type: str | None = None) -> FilePart:
        """An inline file part (base64-encoded, as the wire wants)."""
        encoded = base64.b64encode(content).decode("ascii")
        return cls(file=FileContent(bytes=encoded, name=name, mime_type=mime_type))


def _part_kind(value: Any) -> str | None:
    """``kind`` when given, else guessed from the member a part carries (A2A 1.0 parts have no kind)."""
    if isinstance(value, Mapping):
        kind = value.get("kind")
        if kind is None:
            kind = next((k for k in ("text", "data", "file") if value.get(k) is not None), None)
        return str(kind) if kind is not None else None
    return getattr(value, "kind", None)


Part = Annotated[
    Annotated[DataPart, Tag("data")] | Annotated[TextPart, Tag("text")] | Annotated[FilePart, Tag("file")],
    Discriminator(_part_kind),
]
"""An A2A-style part: ``{kind: "data"|"text"|"file", ...}``; without ``kind``, by the member it carries."""

_parts = TypeAdapter(list[Part])


def parse_parts(raw: Sequence[Part | Mapping[str, Any]]) -> list[Part]:
    """Validate parts given as models or as wire dicts.

    Raises:
        ValueError: a part is malformed (pydantic's ``ValidationError`` is a ``ValueError``).
    """
    return _parts.validate_python([p.to_wire() if isinstance(p, _Wire) else p for p in raw])


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
    params: dict[str, Any] = Field(default_factory=dict)


class EnvCapabilities(_Wire):
    """What the env offers.

    ``operations`` lists the data-plane methods; ``None`` (member missing) is a legacy card
    and means all of them, ``[]`` means no data plane at all.
    """

    tools: list[str | dict[str, Any]] | bool | None = None
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
        extensions = [
            ext.model_copy(update={"params": {**ext.params, "endpoint": urljoin(base_url, ext.params["endpoint"])}})
            if isinstance(ext.params.get("endpoint"), str) else ext
            for ext in self.capabilities.extensions
        ]
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
    data: dict[str, Any] = Field(default_factory=dict)
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

    # card

    async def card(self, *, refresh: bool = False) -> EnvCard:
        """The env's card with absolute urls; fetched once, then cached."""
        if self._card is None or refresh:
            url = urljoin(self.base_url, CARD_PATH)
            response = await self._send("GET", url, what="the card")
            try:
                self._card = EnvCard.model_validate_json(response.content).resolved(self.base_url)
            except ValidationError as exc:
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

    async def data_add(self, parts: Sequence[Part | Mapping[str, Any]]) -> None:
        """Load parts into the env (``data/add``); dict parts are validated first."""
        try:
            wire = [p.to_wire() for p in parse_parts(parts)]
        except ValueError as exc:
            raise ProtocolError(f"cannot send malformed parts to data/add: {exc}", url=self.base_url) from exc
        await self._data_call("data/add", {"parts": wire})

    async def data_get(self) -> list[Part]:
        """Export the env's data (``data/get``) as parts."""
        result = await self._data_call("data/get", {})
        raw = result.get("parts") if isinstance(result, dict) else None
        try:
            return _parts.validate_python(raw)
        except ValidationError as exc:
            raise unusable_reply(self.peer, self.base_url, "a data/get result without a valid 'parts' list",
                                 exc) from exc

    async def export_state(self) -> dict[str, Any]:
        """The env's exported data parts merged into one ``{resource: value}`` mapping."""
        state: dict[str, Any] = {}
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
        params: dict[str, Any] = {"time": _as_utc(time).isoformat()}
        if frozen is not None:
            params["frozen"] = frozen
        result = await self._extension_call(CLOCK_EXTENSION, "clock/set", params)
        return _clock_of(result, self.peer, self.base_url)

    async def clock_advance(self, seconds: float) -> ClockState:
        """Move the virtual clock forward; triggers now due fire and are reported in ``fired``."""
        result = await self._extension_call(CLOCK_EXTENSION, "clock/advance", {"seconds": seconds})
        return _clock_of(result, self.peer, self.base_url)

    async def register_triggers(self, triggers: Sequence[Trigger | Mapping[str, Any]]) -> list[Trigger]:
        """Register timed events; the env answers with them as stored (ids, status)."""
        try:
            wire = [(t if isinstance(t, Trigger) else Trigger.model_validate(t)).to_wire() for t in triggers]
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

    async def call(self, method: str, params: dict[str, Any] | None = None, *, endpoint: str | None = None) -> Any:
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
            raise EnvRpcError(f"{method} failed on {url}: [{error.code}] {error.message}",
                              url=url, code=error.code, data=error.data, method=method)
        if answer.id != body["id"]:
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

    async def _data_call(self, method: str, params: dict[str, Any]) -> Any:
        card = await self._card_offering(method)
        if not card.supports(method):
            reason = "has no data plane (operations: [])" if not card.has_data_plane else "does not offer it"
            raise UnsupportedOperationError(
                f"env {card.name!r} cannot do {method}: its card {reason}", url=card.url, operation=method
            )
        return await self.call(method, params, endpoint=card.url)

    async def _extension_call(self, uri: str, method: str, params: dict[str, Any]) -> Any:
        card = await self._card_offering(method)
        extension = card.extension(uri)
        if extension is None:
            raise UnsupportedOperationError(
                f"env {card.name!r} cannot do {method}: its card does not declare {uri}", url=card.url, operation=uri
            )
        methods = extension.params.get("methods")
        if isinstance(methods, list) and method not in methods:
            raise UnsupportedOperationError(
                f"env {card.name!r} declares {uri} without {method}", url=card.url, operation=method
            )
        endpoint = extension.params.get("endpoint")
        return await self.call(method, params, endpoint=endpoint if isinstance(endpoint, str) else card.url)

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


def parts_to_documents(parts: Sequence[Part]) -> list[dict[str, Any]]:
    """The JSON objects carried by parts: data parts as-is, JSON files and JSON texts parsed.

    This is how an env reads ``data/add``: an environment artifact usually arrives as a JSON
    file part, hand-written seeds as data parts.

    Raises:
        ValueError: a part carries no JSON object (a reference file, non-JSON text or bytes).
    """
    documents: list[dict[str, Any]] = []
    for index, part in enumerate(parts):
        if isinstance(part, DataPart):
            documents.append(part.data)
            continue
        raw = part.text if isinstance(part, TextPart) else part.file.content()
        try:
            value = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"part {index} ({part.kind}) is not a JSON document: {exc}") from exc
        if not isinstance(value, dict):
            raise ValueError(f"part {index} ({part.kind}) holds JSON {type(value).__name__}, expected an object")
        documents.append(value)
    return documents
