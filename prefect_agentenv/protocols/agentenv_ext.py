"""The AgentEnv configuration extensions an agent declares on its A2A card.

Each is an entry of the card's ``capabilities.extensions[]``: ``{uri, params: {endpoint,
methods, supported_fields?}}``. ``methods`` is either a list of operation names served at
``endpoint`` or, as AgentEnv agents write it, a map ``{name: {method?, endpoint?, request?}}``
whose ``request`` lists the fields the operation takes (``supported``, ``required``,
``optional``, ``oneOf``). With no ``methods`` the extension's standard operations are assumed.
Endpoints resolve against the card's base URL, like every URL on the card.

* ``urn:agentenv:mcp-config/v1`` — ``add`` (POST ``{url, name?, headers?}``): how an agent gets
  an env's MCP tools; ``list`` (GET).
* ``urn:agentenv:agent-config/v1`` — ``set`` (POST the fields): only the fields the card
  supports are sent, the others are reported as dropped; ``get`` (GET) when offered.
* ``urn:agentenv:skill-config/v1`` — ``add`` (POST ``{name, description, skill_md}``; sent as
  ``content`` to an agent whose card asks for that field instead); ``list`` (GET).
* ``urn:agentenv:trajectory/v1`` — ``get`` (POST ``{task_id}`` or ``{context_id}``; as query
  parameters when the card says GET).

An agent that lacks an extension (or operation) a step needs gets
:class:`~prefect_agentenv.exceptions.UnsupportedOperationError`, before any request is made.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from prefect_agentenv.exceptions import ProtocolError, UnsupportedOperationError
from prefect_agentenv.jsontypes import JsonObject, JsonValue
from prefect_agentenv.protocols.a2a import DEFAULT_REQUEST_TIMEOUT, A2ACard, A2AClient, as_protocol_error
from prefect_agentenv.protocols.wire import WireModel, unusable_reply

logger = logging.getLogger(__name__)

MCP_CONFIG_EXTENSION = "urn:agentenv:mcp-config/v1"
AGENT_CONFIG_EXTENSION = "urn:agentenv:agent-config/v1"
SKILL_CONFIG_EXTENSION = "urn:agentenv:skill-config/v1"
TRAJECTORY_EXTENSION = "urn:agentenv:trajectory/v1"
PEER_AGENTS_EXTENSION = "urn:agentenv:peer-agents/v1"
AGENT_TRIGGERS_EXTENSION = "urn:agentenv:triggers/v1"

_STANDARD: dict[str, tuple[str, dict[str, str]]] = {
    MCP_CONFIG_EXTENSION: ("/ext/mcp-config", {"add": "POST", "list": "GET"}),
    AGENT_CONFIG_EXTENSION: ("/ext/agent-config", {"set": "POST", "get": "GET"}),
    SKILL_CONFIG_EXTENSION: ("/ext/skill-config", {"add": "POST", "list": "GET"}),
    TRAJECTORY_EXTENSION: ("/ext/trajectory", {"get": "POST"}),
    PEER_AGENTS_EXTENSION: ("/ext/peer-agents", {"set": "POST", "list": "GET"}),
    AGENT_TRIGGERS_EXTENSION: ("/ext/triggers", {"register": "POST", "state": "GET"}),
}
"""Each extension's usual endpoint and its operations' HTTP methods, used where a card is silent."""


class ExtensionOperation(BaseModel):
    """One operation of an extension, ready to call."""

    model_config = ConfigDict(frozen=True)

    name: str
    http_method: str
    url: str
    request: JsonObject = Field(default_factory=dict)
    """The request description from the card (``supported``, ``required``, ``optional``, ``oneOf``)."""

    @property
    def fields(self) -> frozenset[str] | None:
        """Every request field the card names, or ``None`` when it names none."""
        names: set[str] = set()
        groups = [self.request, *_objects(self.request.get("oneOf"))]
        for group in groups:
            for key in ("supported", "required", "optional"):
                listed = group.get(key)
                names.update(str(n) for n in (listed if isinstance(listed, list) else []))
        return frozenset(names) if names else None


class AgentExtension(BaseModel):
    """An extension as declared on an agent's card."""

    model_config = ConfigDict(frozen=True)

    uri: str
    description: str = ""
    params: JsonObject = Field(default_factory=dict)
    operations: dict[str, ExtensionOperation] = Field(default_factory=dict)

    @property
    def supported_fields(self) -> list[str] | None:
        """agent-config: ``params.supported_fields``, else the ``set`` request's field list."""
        declared = self.params.get("supported_fields")
        if isinstance(declared, list):
            return [str(f) for f in declared]
        operation = self.operations.get("set")
        fields = operation.fields if operation else None
        return sorted(fields) if fields is not None else None

    @classmethod
    def from_card(cls, entry: JsonObject, card: A2ACard) -> AgentExtension:
        """Read one ``capabilities.extensions[]`` entry; endpoints are made absolute."""
        uri = str(entry.get("uri", ""))
        params = _obj(entry.get("params"))
        default_endpoint, default_methods = _STANDARD.get(uri, ("", {}))
        endpoint = str(params.get("endpoint") or default_endpoint)
        declared = params.get("methods")
        methods: JsonObject
        if declared is None:
            methods = {name: {} for name in default_methods}
        elif isinstance(declared, list):
            methods = {str(name): {} for name in declared}
        else:
            methods = _obj(declared)
        operations: dict[str, ExtensionOperation] = {}
        for name, raw_spec in methods.items():
            spec = _obj(raw_spec)
            target = str(spec.get("endpoint") or spec.get("path") or endpoint)
            if not target:
                continue
            operations[name] = ExtensionOperation(
                name=name, http_method=str(spec.get("method") or default_methods.get(name, "POST")).upper(),
                url=card.resolve(target), request=_obj(spec.get("request")))
        return cls(uri=uri, description=str(entry.get("description") or ""), params=params, operations=operations)


class AgentConfigResult(BaseModel):
    """What a ``set`` on agent-config sent, and what it left out."""

    sent: JsonObject
    dropped: list[str]
    """Fields the card does not list as supported; they were not sent."""
    response: JsonObject = Field(default_factory=dict)


class SkillEntry(WireModel):
    """A skill an agent lists (skill-config ``list``); other members it sends are kept."""

    name: str | None = None
    description: str | None = None


class McpServerEntry(WireModel):
    """An MCP server an agent lists (mcp-config ``list``): header names at most, never their values."""

    name: str | None = None
    url: str | None = None
    headers: JsonValue = None
    """As the agent lists them (usually the header names)."""


class PeerAgentEntry(WireModel):
    """An agent a peer may delegate to (peer-agents ``list``)."""

    name: str | None = None
    url: str | None = None
    description: str | None = None
    card: JsonObject | None = None


_Entry = TypeVar("_Entry", SkillEntry, McpServerEntry, PeerAgentEntry)


class AgentTrajectory(BaseModel):
    """An agent's trajectory of one task or one context, as the agent returned it."""

    task_id: str | None = None
    context_id: str | None = None
    events: list[Any] = Field(default_factory=list)
    path: str | None = None
    """Where the agent stored it, when it said."""
    raw: Any = None


class AgentEnvExtensions:
    """Calls the AgentEnv extensions an agent's card declares.

    Args:
        card: the agent's card (see :meth:`A2AClient.card`).
        http: the run's shared httpx client.
        timeout: bound on each request, in seconds.
    """

    def __init__(self, card: A2ACard, http: httpx.AsyncClient, *, timeout: float = DEFAULT_REQUEST_TIMEOUT) -> None:
        self.card = card
        self.http = http
        self.timeout = timeout
        self.extensions = {e.uri: e for e in (AgentExtension.from_card(raw, card) for raw in card.extensions) if e.uri}

    @classmethod
    async def of(cls, client: A2AClient) -> AgentEnvExtensions:
        """The extensions of the agent ``client`` talks to, over the client's httpx client."""
        return cls(await client.card(), client.http, timeout=client.request_timeout)

    @property
    def agent(self) -> str:
        """How errors name the agent."""
        named = f"agent {self.card.name!r}" if self.card.name else "agent"
        return f"{named} at {self.card.base_url}"

    def has(self, uri: str, operation: str | None = None) -> bool:
        """Whether the card declares the extension (and, if named, the operation)."""
        found = self.extensions.get(uri)
        return found is not None and (operation is None or operation in found.operations)

    def operation(self, uri: str, name: str, *, purpose: str) -> ExtensionOperation:
        """The operation to call, or a clear error saying what the agent lacks and who needs it.

        Raises:
            UnsupportedOperationError: the card does not declare the extension or the operation.
        """
        extension = self.extensions.get(uri)
        if extension is None:
            declared = sorted(self.extensions) or ["none"]
            raise UnsupportedOperationError(
                f"{self.agent} does not declare the {uri} extension, which is needed to {purpose} "
                f"(its card declares: {', '.join(declared)})", url=self.card.card_url, operation=uri)
        found = extension.operations.get(name)
        if found is None:
            raise UnsupportedOperationError(
                f"{self.agent} declares {uri} without its {name!r} operation, which is needed to {purpose} "
                f"(it offers: {', '.join(sorted(extension.operations)) or 'none'})",
                url=self.card.card_url, operation=f"{uri}#{name}")
        return found

    # mcp-config

    async def add_mcp_server(self, url: str, *, name: str | None = None,
                             headers: Mapping[str, str] | None = None) -> JsonObject:
        """Give the agent an MCP server (an env's tools); header values are never logged."""
        operation = self.operation(MCP_CONFIG_EXTENSION, "add", purpose=f"give it the MCP server {url}")
        payload: JsonObject = {"url": url}
        if name is not None:
            payload["name"] = name
        if headers:
            payload["headers"] = {key: value for key, value in headers.items()}
        logger.info("giving %s the MCP server %s (%s)", self.agent, name or "unnamed", url)
        return _as_dict(await self._call(operation, payload, "mcp-config add"))

    async def list_mcp_servers(self) -> list[McpServerEntry]:
        """The MCP servers the agent holds, as it lists them."""
        operation = self.operation(MCP_CONFIG_EXTENSION, "list", purpose="list its MCP servers")
        answer = _as_dict(await self._call(operation, None, "mcp-config list"))
        return self._listing(McpServerEntry, _entries(answer.get("mcp_servers")), operation, "an MCP server list")

    # agent-config

    def filter_agent_config(self, config: Mapping[str, JsonValue]) -> tuple[JsonObject, list[str]]:
        """Split ``config`` into the fields the card supports and the names of the others.

        ``None`` values are left out (not set, not dropped). A card that lists no supported
        fields accepts them all.
        """
        present: JsonObject = {k: v for k, v in config.items() if v is not None}
        extension = self.extensions.get(AGENT_CONFIG_EXTENSION)
        supported = extension.supported_fields if extension else None
        if supported is None:
            return present, []
        kept: JsonObject = {k: v for k, v in present.items() if k in supported}
        return kept, sorted(set(present) - set(kept))

    async def set_agent_config(self, config: Mapping[str, JsonValue]) -> AgentConfigResult:
        """Send the supported fields of ``config``; nothing is sent when none remain."""
        sent, dropped = self.filter_agent_config(config)
        if dropped:
            logger.warning("%s does not support the agent-config fields %s; they were not sent", self.agent, dropped)
        if not sent:
            return AgentConfigResult(sent={}, dropped=dropped)
        operation = self.operation(AGENT_CONFIG_EXTENSION, "set", purpose=f"set {', '.join(sorted(sent))}")
        response = _as_dict(await self._call(operation, sent, "agent-config set"))
        return AgentConfigResult(sent=sent, dropped=dropped, response=response)

    async def get_agent_config(self) -> JsonObject:
        """The agent's configuration as it reads it back (the optional ``get`` operation)."""
        operation = self.operation(AGENT_CONFIG_EXTENSION, "get", purpose="read its configuration back")
        answer = _as_dict(await self._call(operation, None, "agent-config get"))
        config = answer.get("config")
        return config if isinstance(config, dict) else answer

    # skill-config

    async def add_skill(self, name: str, description: str, content: str) -> JsonObject:
        """Register a skill; its text goes as ``skill_md`` unless the card asks for ``content``."""
        operation = self.operation(SKILL_CONFIG_EXTENSION, "add", purpose=f"register the skill {name!r}")
        fields = operation.fields or frozenset()
        body_field = "content" if "content" in fields and "skill_md" not in fields else "skill_md"
        payload: JsonObject = {"name": name, "description": description, body_field: content}
        return _as_dict(await self._call(operation, payload, "skill-config add"))

    async def list_skills(self) -> list[SkillEntry]:
        """The skills the agent holds, as it lists them."""
        operation = self.operation(SKILL_CONFIG_EXTENSION, "list", purpose="list its skills")
        answer = _as_dict(await self._call(operation, None, "skill-config list"))
        return self._listing(SkillEntry, _entries(answer.get("skills")), operation, "a skill list")

    # peer-agents

    async def set_peer_agents(self, peers: Sequence[JsonObject]) -> JsonObject:
        """Replace the agent's routing table: the agents it may delegate to, ``{name, url, card?, description?}``."""
        operation = self.operation(PEER_AGENTS_EXTENSION, "set", purpose="give it peer agents")
        return _as_dict(await self._call(operation, {"peers": [*peers]}, "peer-agents set"))

    async def list_peer_agents(self) -> list[PeerAgentEntry]:
        """The peers the agent holds, as it lists them."""
        operation = self.operation(PEER_AGENTS_EXTENSION, "list", purpose="list its peer agents")
        answer = _as_dict(await self._call(operation, None, "peer-agents list"))
        return self._listing(PeerAgentEntry, _objects(answer.get("peers")), operation, "a peer-agent list")

    # triggers

    async def register_triggers(self, triggers: Sequence[JsonObject]) -> JsonObject:
        """Register triggers with the agent; it answers with what it ``added``."""
        operation = self.operation(AGENT_TRIGGERS_EXTENSION, "register", purpose="register triggers with it")
        return _as_dict(await self._call(operation, {"triggers": [*triggers]}, "triggers register"))

    # trajectory

    async def get_trajectory(self, *, task_id: str | None = None, context_id: str | None = None) -> AgentTrajectory:
        """The trajectory of one task or of a whole context (give exactly one).

        Raises:
            UnsupportedOperationError: the card says the agent cannot look up by that key.
            ProtocolError: the agent does not know the task or context (``code`` 404), or failed.
        """
        if (task_id is None) == (context_id is None):
            raise ValueError("give task_id or context_id, exactly one")
        key, value = ("task_id", task_id) if task_id is not None else ("context_id", context_id)
        operation = self.operation(TRAJECTORY_EXTENSION, "get", purpose=f"read the trajectory of a {key[:-3]}")
        if operation.fields is not None and key not in operation.fields:
            raise UnsupportedOperationError(
                f"{self.agent} reads trajectories by {', '.join(sorted(operation.fields))}, not by {key}",
                url=self.card.card_url, operation=f"{TRAJECTORY_EXTENSION}#get:{key}")
        answer = await self._call(operation, {key: value}, "trajectory get")
        return _trajectory(answer, task_id=task_id, context_id=context_id)

    def _listing(self, model: type[_Entry], entries: list[JsonObject], operation: ExtensionOperation,
                 what: str) -> list[_Entry]:
        """A listing's entries read as ``model``; an entry we cannot read names the agent and field."""
        try:
            return [model.model_validate(entry) for entry in entries]
        except ValidationError as exc:
            raise unusable_reply(self.agent, operation.url, what, exc) from exc

    async def _call(self, operation: ExtensionOperation, payload: JsonObject | None, doing: str) -> JsonValue:
        try:
            if operation.http_method == "GET":
                response = await self.http.get(operation.url, params=_query(payload), timeout=self.timeout)
            else:
                response = await self.http.request(operation.http_method, operation.url, json=payload or {},
                                                   timeout=self.timeout)
        except httpx.HTTPError as exc:
            raise as_protocol_error(exc, operation.url, doing) from exc
        if response.status_code >= 400:
            raise ProtocolError(f"{operation.url} refused {doing} with HTTP {response.status_code}: "
                                f"{response.text[:500]}", url=operation.url, code=response.status_code)
        if not response.content:
            return {}
        try:
            return response.json()
        except ValueError as exc:
            raise ProtocolError(f"{operation.url} answered {doing} with something other than JSON",
                                url=operation.url) from exc


def _obj(value: JsonValue) -> JsonObject:
    """``value`` when it is a JSON object, else an empty one: cards omit or garble members."""
    return value if isinstance(value, dict) else {}


def _objects(value: JsonValue) -> list[JsonObject]:
    """The objects of a JSON array (anything else, or an entry that is no object, is skipped)."""
    return [entry for entry in value if isinstance(entry, dict)] if isinstance(value, list) else []


def _entries(value: JsonValue) -> list[JsonObject]:
    """A listing as a list of objects: ``[{name, ...}]``, or ``{name: {...}}`` (the AgentEnv SDK's form)."""
    if isinstance(value, dict):
        return [{"name": name, **entry} for name, entry in value.items() if isinstance(entry, dict)]
    return _objects(value)


def _query(payload: JsonObject | None) -> dict[str, str | int | float | bool] | None:
    """A GET operation's payload as query parameters (its scalar members; GET payloads hold only those)."""
    scalars = {k: v for k, v in (payload or {}).items() if isinstance(v, str | int | float | bool)}
    return scalars or None


def _as_dict(value: JsonValue) -> JsonObject:
    return value if isinstance(value, dict) else {"result": value}


def _text(value: JsonValue, default: str | None) -> str | None:
    return value if isinstance(value, str) else default


def _trajectory(answer: JsonValue, *, task_id: str | None, context_id: str | None) -> AgentTrajectory:
    """Accept ``{trajectory: [...]}`` (AgentEnv), ``{events: [...]}`` or a bare list."""
    if isinstance(answer, list):
        return AgentTrajectory(task_id=task_id, context_id=context_id, events=answer, raw=answer)
    body = _as_dict(answer)
    events = body.get("trajectory", body.get("events", []))
    if isinstance(events, dict):
        events = events.get("events", [])
    return AgentTrajectory(task_id=_text(body.get("task_id"), task_id),
                           context_id=_text(body.get("context_id"), context_id),
                           events=events if isinstance(events, list) else [], path=_text(body.get("path"), None),
                           raw=answer)
