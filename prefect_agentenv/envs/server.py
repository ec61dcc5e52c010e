"""Scaffolding shared by the reference env servers: card, data plane, MCP, clock and triggers.

An env is an :class:`EnvBackend` (its data, its MCP tools, its trigger actions). This module
wraps it in one Starlette app served by uvicorn:

* ``GET /.well-known/agent-env.json`` — the card (tools, data-plane operations, extensions);
* ``POST /agentenv`` — JSON-RPC 2.0: ``data/reset``, ``data/add``, ``data/get`` and the
  extension methods ``clock/get``, ``clock/set {time, frozen?}``, ``clock/advance {seconds}``,
  ``triggers/register {triggers: [{at, action, data}]}``, ``triggers/list``. Each method names
  its params model; dispatch validates the params once and hands the handler the model (bad
  params answer -32602 with pydantic's errors);
* ``/mcp`` — the tools over MCP streamable HTTP (mcp 2.x ``MCPServer``, which also answers
  1.x clients through the ``initialize`` handshake).

The virtual clock runs with the wall clock from the instant it was last set (or stands
still when ``frozen``). Due triggers fire lazily: before every HTTP request and after every
clock or trigger call — so an agent's next tool call sees an email delivered at 09:00 as
soon as the clock has passed 09:00, without a background task.

Tools are ``async def`` on purpose: they then run on the event loop like the data-plane
handlers, so the backend's state needs no locks.

Started as ``python -m prefect_agentenv.envs.<name> --host 127.0.0.1 --port N``; binding a
loopback address turns on the MCP transport's Host-header check (other Host values are
refused on ``/mcp``). ``--no-data-plane`` serves the same env with ``operations: []``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, Generic, TypeVar

import uvicorn
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.protocols import jsonrpc
from prefect_agentenv.protocols.env import (
    CLOCK_EXTENSION,
    CLOCK_METHODS,
    DATA_OPERATIONS,
    ENV_PROTOCOL_VERSION,
    TRIGGER_METHODS,
    TRIGGERS_EXTENSION,
    ClockState,
    EnvCapabilities,
    EnvCard,
    EnvExtension,
    EnvInterface,
    Part,
    Trigger,
    UtcDatetime,
    parts_to_documents,
)

logger = logging.getLogger(__name__)

CARD_ROUTE = "/.well-known/agent-env.json"
RPC_ROUTE = "/agentenv"
MCP_ROUTE = "/mcp"
GRACEFUL_SHUTDOWN_SECONDS = 2
"""An MCP client may hold a GET event stream open; without a bound, SIGTERM would wait for it."""

TriggerAction = Callable[[JsonObject, datetime], None]
"""Performs a trigger: receives its ``data`` and its ``at`` (the instant it is due)."""


class VirtualClock:
    """The env's notion of now: wall-clock time shifted to a set instant, or frozen there."""

    def __init__(self, wall: Callable[[], datetime] = lambda: datetime.now(UTC),
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._wall = wall
        self._monotonic = monotonic
        self.reset()

    def reset(self) -> None:
        """Back to real time, running."""
        self._set(self._wall(), frozen=False)

    def now(self) -> datetime:
        if self.frozen:
            return self._anchor
        return self._anchor + timedelta(seconds=self._monotonic() - self._anchored_at)

    def set(self, instant: datetime, *, frozen: bool | None = None) -> None:
        """Jump to ``instant``; ``frozen`` stops (True) or restarts (False) the clock, None keeps it."""
        self._set(instant, frozen=self.frozen if frozen is None else frozen)

    def advance(self, seconds: float) -> None:
        self._set(self.now() + timedelta(seconds=seconds), frozen=self.frozen)

    def _set(self, instant: datetime, *, frozen: bool) -> None:
        self._anchor = instant.astimezone(UTC)
        self._anchored_at = self._monotonic()
        self.frozen = frozen


class TriggerBook:
    """Registered triggers, fired in ``at`` order once the clock has reached them."""

    def __init__(self, actions: Mapping[str, TriggerAction]) -> None:
        self._actions = dict(actions)
        self._triggers: list[Trigger] = []
        self._ids = itertools.count(1)

    @property
    def action_names(self) -> list[str]:
        return sorted(self._actions)

    def clear(self) -> None:
        self._triggers.clear()
        self._ids = itertools.count(1)

    def register(self, triggers: Sequence[Trigger]) -> list[Trigger]:
        """Store triggers as pending; all are refused if one names an unknown action or id."""
        taken = {t.id for t in self._triggers}
        for trigger in triggers:
            if trigger.action not in self._actions:
                raise jsonrpc.JsonRpcFault(
                    jsonrpc.INVALID_PARAMS, f"unknown trigger action {trigger.action!r}",
                    {"code": "unknown_action", "action": trigger.action, "known": self.action_names},
                )
            if trigger.id is not None and trigger.id in taken:
                raise jsonrpc.JsonRpcFault.env_error("duplicate_id", f"trigger {trigger.id!r} already exists")
        stored = [t.model_copy(update={"id": t.id or f"trigger-{next(self._ids)}", "status": "pending",
                                       "error": None}) for t in triggers]
        self._triggers.extend(stored)
        return stored

    def registered(self) -> list[Trigger]:
        """Every trigger, in registration order, with its status."""
        return list(self._triggers)

    def fire_due(self, now: datetime) -> list[Trigger]:
        """Perform every pending trigger due at ``now``; a failing action marks only its trigger."""
        due = sorted((t for t in self._triggers if t.status == "pending" and t.at <= now), key=lambda t: t.at)
        fired: list[Trigger] = []
        for trigger in due:
            try:
                self._actions[trigger.action](dict(trigger.data), trigger.at)
                done = trigger.model_copy(update={"status": "fired"})
            except Exception as exc:
                # Triggers fire inside whatever request ticked the clock; one bad trigger must
                # fail alone, visibly in triggers/list, not break that request.
                logger.warning("trigger %s (%s) failed: %s", trigger.id, trigger.action, exc)
                done = trigger.model_copy(update={"status": "failed", "error": str(exc)})
            self._triggers[self._triggers.index(trigger)] = done
            fired.append(done)
        return fired


class EnvBackend(ABC):
    """An env's data, tools and trigger actions; the scaffold does the wire work.

    ``reset``/``load``/``export`` back the data plane. ``export`` must return the same shape
    ``load`` accepts, so a snapshot (``data/get``) can be loaded back (``data/add``).
    """

    name: ClassVar[str]
    version: ClassVar[str] = "1.0.0"
    description: ClassVar[str] = ""

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock

    @abstractmethod
    def reset(self) -> None:
        """Drop every record."""

    @abstractmethod
    def load(self, documents: Sequence[JsonObject]) -> None:
        """Add seed documents; validate them all before changing anything.

        Raises:
            ValueError: a document is malformed (pydantic errors included) → -32602.
            JsonRpcFault: an env-level refusal, e.g. a duplicate id → -32000.
        """

    @abstractmethod
    def export(self) -> JsonObject:
        """Every resource as ``{resource: [records]}``."""

    @abstractmethod
    def register_tools(self, mcp: MCPServer) -> None:
        """Add the env's tools to the MCP server."""

    def trigger_actions(self) -> Mapping[str, TriggerAction]:
        """Trigger actions by name; none by default."""
        return {}


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _NoParams(_Params):
    pass


class _AddParams(_Params):
    parts: list[Part]


class _ClockSetParams(_Params):
    time: UtcDatetime
    frozen: bool | None = None


class _ClockAdvanceParams(_Params):
    seconds: float = Field(ge=0)


class _RegisterParams(_Params):
    triggers: list[Trigger] = Field(min_length=1)


P = TypeVar("P", bound=_Params)


@dataclass(frozen=True)
class _Method(Generic[P]):
    """A JSON-RPC method: its params model and the handler that receives them validated."""

    params: type[P]
    handler: Callable[[P], JsonObject]

    def __call__(self, raw: JsonObject) -> JsonObject:
        """Validate ``raw`` once (a ``ValidationError`` answers invalid params), then handle it."""
        return self.handler(self.params.model_validate(raw))


class EnvRuntime:
    """Binds a backend to its clock and triggers and answers the JSON-RPC methods."""

    def __init__(self, backend: EnvBackend, mcp: MCPServer, *, data_plane: bool = True) -> None:
        self.backend = backend
        self.clock = backend.clock
        self.mcp = mcp
        self.data_plane = data_plane
        self.triggers = TriggerBook(backend.trigger_actions())
        self.methods: dict[str, _Method[Any]] = {
            "clock/get": _Method(_NoParams, self._clock_get),
            "clock/set": _Method(_ClockSetParams, self._clock_set),
            "clock/advance": _Method(_ClockAdvanceParams, self._clock_advance),
            "triggers/register": _Method(_RegisterParams, self._triggers_register),
            "triggers/list": _Method(_NoParams, self._triggers_list),
        }
        if data_plane:
            self.methods |= {"data/reset": _Method(_NoParams, self._data_reset),
                             "data/add": _Method(_AddParams, self._data_add),
                             "data/get": _Method(_NoParams, self._data_get)}

    def tick(self) -> list[Trigger]:
        """Fire the triggers the clock has reached."""
        return self.triggers.fire_due(self.clock.now())

    async def card(self) -> EnvCard:
        tools = [tool.name for tool in await self.mcp.list_tools()]
        endpoint = {"endpoint": RPC_ROUTE}
        return EnvCard(
            name=self.backend.name, description=self.backend.description, version=self.backend.version,
            protocol_version=ENV_PROTOCOL_VERSION, url=RPC_ROUTE,
            additional_interfaces=[EnvInterface(url=MCP_ROUTE, transport="mcp")],
            capabilities=EnvCapabilities(
                tools=list(tools),
                operations=list(DATA_OPERATIONS) if self.data_plane else [],
                extensions=[
                    EnvExtension(uri=CLOCK_EXTENSION, description="Virtual clock; due triggers fire when it moves.",
                                 params={**endpoint, "methods": list(CLOCK_METHODS)}),
                    EnvExtension(uri=TRIGGERS_EXTENSION, description="Timed events performed by the env.",
                                 params={**endpoint, "methods": list(TRIGGER_METHODS),
                                         "actions": [*self.triggers.action_names]}),
                ],
            ),
        )

    def dispatch(self, body: JsonObject) -> JsonObject | None:
        """Answer one JSON-RPC message; ``None`` for a notification (no ``id`` member)."""
        try:
            request = jsonrpc.Request.model_validate(body)
        except ValidationError:
            # Echo whatever ``id`` was sent, even one JSON-RPC does not allow.
            return {**jsonrpc.failure(None, jsonrpc.INVALID_REQUEST, "Invalid Request"), "id": body.get("id")}
        reply = self._answer(request)
        return reply if "id" in body else None

    def _answer(self, request: jsonrpc.Request) -> JsonObject:
        handler = self.methods.get(request.method)
        if handler is None:
            return jsonrpc.failure(request.id, jsonrpc.METHOD_NOT_FOUND, f"Method not found: {request.method}",
                                   {"method": request.method, "available": sorted(self.methods)})
        if isinstance(request.params, list):
            return jsonrpc.failure(request.id, jsonrpc.INVALID_PARAMS, "params must be an object")
        try:
            return jsonrpc.success(request.id, handler(request.params or {}))
        except ValidationError as exc:
            errors = json.loads(exc.json(include_url=False, include_input=False))
            return jsonrpc.failure(request.id, jsonrpc.INVALID_PARAMS, f"Invalid params for {request.method}",
                                   {"code": "invalid_params", "errors": errors})
        except jsonrpc.JsonRpcFault as fault:
            return jsonrpc.failure(request.id, fault.code, fault.message, fault.data)
        except ValueError as exc:
            return jsonrpc.failure(request.id, jsonrpc.INVALID_PARAMS, str(exc), {"code": "invalid_params"})
        except Exception:
            logger.exception("%s failed", request.method)
            return jsonrpc.failure(request.id, jsonrpc.INTERNAL_ERROR, f"Internal error in {request.method}")

    # data plane

    def _data_reset(self, params: _NoParams) -> JsonObject:
        """A reset also clears triggers and returns the clock to real time: a fresh instance."""
        self.backend.reset()
        self.triggers.clear()
        self.clock.reset()
        return {}

    def _data_add(self, params: _AddParams) -> JsonObject:
        self.backend.load(parts_to_documents(params.parts))
        return {}

    def _data_get(self, params: _NoParams) -> JsonObject:
        return {"parts": [{"kind": "data", "data": self.backend.export()}]}

    # clock and triggers

    def _clock_state(self, fired: list[Trigger]) -> JsonObject:
        return ClockState(time=self.clock.now(), frozen=self.clock.frozen, fired=fired).to_wire()

    def _clock_get(self, params: _NoParams) -> JsonObject:
        return self._clock_state([])

    def _clock_set(self, params: _ClockSetParams) -> JsonObject:
        self.clock.set(params.time, frozen=params.frozen)
        return self._clock_state(self.tick())

    def _clock_advance(self, params: _ClockAdvanceParams) -> JsonObject:
        self.clock.advance(params.seconds)
        return self._clock_state(self.tick())

    def _triggers_register(self, params: _RegisterParams) -> JsonObject:
        stored = self.triggers.register(params.triggers)
        self.tick()
        by_id = {t.id: t for t in self.triggers.registered()}
        return {"triggers": [by_id[t.id].to_wire() for t in stored]}

    def _triggers_list(self, params: _NoParams) -> JsonObject:
        return {"triggers": [t.to_wire() for t in self.triggers.registered()]}

    # HTTP

    async def card_endpoint(self, request: Request) -> Response:
        return JSONResponse((await self.card()).to_wire())

    async def rpc_endpoint(self, request: Request) -> Response:
        try:
            body = json.loads(await request.body())
        except ValueError:
            return JSONResponse(jsonrpc.failure(None, jsonrpc.PARSE_ERROR, "Parse error"))
        reply = self.dispatch(body) if isinstance(body, dict) else jsonrpc.failure(
            None, jsonrpc.INVALID_REQUEST, "Invalid Request: expected one JSON-RPC object")
        return Response(status_code=204) if reply is None else JSONResponse(reply)


class _TickFirst:
    """ASGI middleware: fire due triggers before each HTTP request is handled."""

    def __init__(self, app: ASGIApp, runtime: EnvRuntime) -> None:
        self.app = app
        self.runtime = runtime

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.runtime.tick()
        await self.app(scope, receive, send)


def build_app(backend_type: Callable[[VirtualClock], EnvBackend], *, host: str = "127.0.0.1",
              data_plane: bool = True, clock: VirtualClock | None = None) -> ASGIApp:
    """The env's ASGI app: card, JSON-RPC data plane and MCP at ``/mcp``.

    Args:
        backend_type: builds the backend around the clock (usually the backend class).
        host: the address the server binds; loopback turns on the MCP Host-header check.
        data_plane: ``False`` serves ``operations: []`` and no ``data/*`` methods.
        clock: the virtual clock; a fresh running one by default.
    """
    backend = backend_type(clock or VirtualClock())
    mcp: MCPServer = MCPServer(backend.name, version=backend.version, instructions=backend.description,
                               log_level="WARNING")
    backend.register_tools(mcp)
    runtime = EnvRuntime(backend, mcp, data_plane=data_plane)
    mcp.custom_route(CARD_ROUTE, methods=["GET"])(runtime.card_endpoint)
    mcp.custom_route(RPC_ROUTE, methods=["POST"])(runtime.rpc_endpoint)
    return _TickFirst(mcp.streamable_http_app(streamable_http_path=MCP_ROUTE, host=host), runtime)


def main(backend_type: type[EnvBackend], argv: Sequence[str] | None = None) -> None:
    """Command line of an env: ``--host``, ``--port``, ``--no-data-plane``, ``--log-level``."""
    parser = argparse.ArgumentParser(
        prog=f"python -m {backend_type.__module__.rsplit('.', 1)[0]}",
        description=f"Serve the {backend_type.name!r} env: card, JSON-RPC data plane and MCP tools.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port to bind (default: 8000)")
    parser.add_argument("--no-data-plane", action="store_true",
                        help="serve tools only: the card lists operations: [] and data/* are unknown")
    parser.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    args = parser.parse_args(argv)
    app = build_app(backend_type, host=args.host, data_plane=not args.no_data_plane)
    print(f"env {backend_type.name!r} on http://{args.host}:{args.port} (card {CARD_ROUTE}, "
          f"data plane {RPC_ROUTE}, MCP {MCP_ROUTE})", file=sys.stderr, flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, lifespan="on",
                timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS)
