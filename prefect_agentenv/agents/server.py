"""Scaffolding shared by the reference agents: an A2A server with the AgentEnv extensions.

A reference agent is an :class:`AgentBackend` (what it does with one prompt). This module
wraps it in one Starlette app served by uvicorn:

* ``GET /.well-known/agent-card.json`` (and the older ``/.well-known/agent.json``, which
  AgentEnv runners read) — the card, declaring an A2A 1.0 and a 0.3 JSON-RPC interface and the
  four AgentEnv extensions below;
* ``POST /`` — A2A JSON-RPC from the a2a-sdk 1.x server, with v0.3 compatibility on, so
  ``SendMessage`` (1.0, with an ``A2A-Version: 1.0`` header) and ``message/send`` (0.3) both
  work, blocking or not, with ``tasks/get`` / ``tasks/cancel`` (``GetTask`` / ``CancelTask``);
* ``/ext/mcp-config`` — ``POST {url, name?, headers?}`` adds an MCP server, ``GET`` lists them;
* ``/ext/agent-config`` — ``POST {field: value}`` sets fields (only those the card lists;
  others are refused with 400), ``GET`` reads the configuration back;
* ``/ext/skill-config`` — ``POST {name, description, skill_md}`` (``content`` is accepted for
  ``skill_md``) registers a skill and writes it to ``skills/<name>/SKILL.md``; ``GET`` lists;
* ``/ext/trajectory`` — ``POST {task_id}`` or ``{context_id}`` (or ``GET`` with the same as
  query parameters) returns ``{task_id?, context_id, trajectory: [events], path?}``.

A backend with ``steerable = True`` also takes a message naming a task that is still working
(same ``taskId``/``contextId``): its card declares the steering extension and the running turn
reads the message at its next safe point (:mod:`prefect_agentenv.agents.steering`).

Every reply message ends with a data part, as AgentEnv agents' do: ``{usage: {tool_call_count},
trajectory}`` on success, ``{error_type, error_code, error_message, trajectory}`` on failure
(the task then ends ``failed``). A trajectory is the list of events of one task —
``{kind: "message"|"model"|"tool_call"|"tool_result"|"error", at, ...}`` — saved as
``trajectories/<task_id>.json`` in the sandbox after every prompt.

The agent's working folder is its cwd (the sandbox). Absolute sandbox paths such as
``/app/artifact`` map under the sandbox root (``--sandbox-root``, else
``$AGENTENV_SANDBOX_ROOT``, else the cwd) and relative ones are relative to it, the same mapping
the run uses on the host: see :func:`sandbox_path`.

Started as ``python -m prefect_agentenv.agents.<name> --host 127.0.0.1 --port N``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, TypeVar

import uvicorn
from a2a.helpers import new_data_part, new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentExtension, AgentInterface, AgentSkill, Part
from google.protobuf import struct_pb2
from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from prefect_agentenv.agents.state import (
    AgentState,
    McpServerConfig,
    SkillConfig,
    Trajectory,
    TrajectoryRequest,
)
from prefect_agentenv.agents.steering import STEERING_EXTENSION, SteeringRequestHandler
from prefect_agentenv.jsontypes import JsonArray, JsonObject
from prefect_agentenv.protocols.agentenv_ext import (
    AGENT_CONFIG_EXTENSION,
    MCP_CONFIG_EXTENSION,
    SKILL_CONFIG_EXTENSION,
    TRAJECTORY_EXTENSION,
)
from prefect_agentenv.runtime.resources.sandbox import SANDBOX_ROOT_VARIABLE, sandbox_path, sandbox_root

__all__ = [
    "AgentBackend", "AgentFailure", "AgentState", "Turn", "TurnResult", "build_app", "build_card", "main",
    "sandbox_path", "sandbox_root",
]

logger = logging.getLogger(__name__)

CARD_ROUTE = "/.well-known/agent-card.json"
LEGACY_CARD_ROUTE = "/.well-known/agent.json"
RPC_ROUTE = "/"
MCP_CONFIG_ROUTE = "/ext/mcp-config"
AGENT_CONFIG_ROUTE = "/ext/agent-config"
SKILL_CONFIG_ROUTE = "/ext/skill-config"
TRAJECTORY_ROUTE = "/ext/trajectory"
GRACEFUL_SHUTDOWN_SECONDS = 2
"""A client polling a task must not hold SIGTERM up for long."""
BASE_CONFIG_FIELDS: tuple[str, ...] = ("system_prompt", "model", "max_turns", "max_turn_tokens")

_M = TypeVar("_M", bound=BaseModel)


@dataclass
class Turn:
    """One prompt given to a backend."""

    text: str
    task_id: str
    context_id: str
    number: int
    """1 for the first prompt of a context, 2 for the next, …"""
    trajectory: Trajectory
    state: AgentState
    inbox: list[str] = field(default_factory=list)
    """Steering messages delivered while the turn runs (see :meth:`take_steered`)."""

    def steer(self, text: str) -> None:
        """A follow-up message into this running turn (A2A: same taskId while ``working``)."""
        self.inbox.append(text)

    def take_steered(self) -> list[str]:
        """The steering messages delivered since the last call, recorded in the trajectory.

        A backend calls it at its safe points; the last call must come after its last ``await``,
        so no message can arrive between it and the end of the turn."""
        taken, self.inbox = self.inbox, []
        for text in taken:
            self.trajectory.record("message", role="user", text=text, steered=True)
        return taken


@dataclass
class TurnResult:
    """A backend's answer: the reply text, how many tools it called, extra reply data."""

    text: str
    tool_call_count: int = 0
    data: JsonObject = field(default_factory=dict)


class AgentFailure(Exception):
    """Raised by a backend to end the task ``failed`` with an error data part."""

    def __init__(self, message: str, *, error_type: str = "agent_error", error_code: str | None = None,
                 tool_call_count: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.error_type = error_type
        self.error_code = error_code
        self.tool_call_count = tool_call_count


class AgentBackend(ABC):
    """What a reference agent does with one prompt; the scaffold does the wire work."""

    name: ClassVar[str]
    description: ClassVar[str] = ""
    version: ClassVar[str] = "1.0.0"
    config_fields: ClassVar[tuple[str, ...]] = BASE_CONFIG_FIELDS
    """Agent-config fields the card declares; a POST with any other field is refused."""
    steerable: ClassVar[bool] = False
    """Takes messages into a working task (its turns read them with ``Turn.take_steered``); the
    card then declares the steering extension."""

    def __init__(self, state: AgentState) -> None:
        self.state = state

    @abstractmethod
    async def respond(self, turn: Turn) -> TurnResult:
        """Answer one prompt; raise :class:`AgentFailure` to fail the task."""

    async def aclose(self) -> None:  # noqa: B027 - a hook; most backends hold nothing
        """Release what the backend holds (clients, sessions) at shutdown."""


class _Executor(AgentExecutor):
    """Runs a backend for each task and ends the task with the AgentEnv-style reply."""

    def __init__(self, backend: AgentBackend) -> None:
        self.backend = backend
        self.live: dict[str, Turn] = {}
        """The running turns of a steerable backend, by task id."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is None:
            if context.message is None:
                raise ValueError("a task needs a message")
            task = new_task_from_user_message(context.message)
            # Enqueued first: a non-blocking send is answered as soon as the task exists.
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        trajectory, number = self.backend.state.start_task(task.id, task.context_id)
        text = context.get_user_input()
        trajectory.record("message", role="user", text=text)
        try:
            result = await self._respond(Turn(text, task.id, task.context_id, number, trajectory, self.backend.state))
        except asyncio.CancelledError:
            trajectory.record("error", error_type="cancelled", message="the task was cancelled")
            trajectory.save()
            raise
        except AgentFailure as failure:
            await self._fail(updater, trajectory, failure)
        except Exception as exc:
            logger.exception("task %s failed", task.id)
            await self._fail(updater, trajectory, AgentFailure(f"{type(exc).__name__}: {exc}",
                                                               error_type="internal_error"))
        else:
            trajectory.record("message", role="agent", text=result.text)
            trajectory.save()
            data: JsonObject = {**result.data, "usage": {"tool_call_count": result.tool_call_count},
                    "trajectory": str(trajectory.path)}
            await updater.complete(updater.new_agent_message(_reply_parts(result.text, data)))

    async def _respond(self, turn: Turn) -> TurnResult:
        """The backend's answer; a steerable backend's turn takes steering messages meanwhile."""
        if not self.backend.steerable:
            return await self.backend.respond(turn)
        self.live[turn.task_id] = turn
        try:
            return await self.backend.respond(turn)
        finally:
            del self.live[turn.task_id]  # no await since the backend's last take: nothing is lost
            for text in turn.take_steered():
                logger.warning("task %s ended before it read a steering message (%d characters)",
                               turn.task_id, len(text))

    async def _fail(self, updater: TaskUpdater, trajectory: Trajectory, failure: AgentFailure) -> None:
        trajectory.record("error", error_type=failure.error_type, error_code=failure.error_code,
                          message=failure.message)
        trajectory.save()
        data: JsonObject = {"error_type": failure.error_type, "error_code": failure.error_code or failure.error_type,
                "error_message": failure.message, "usage": {"tool_call_count": failure.tool_call_count},
                "trajectory": str(trajectory.path)}
        await updater.failed(updater.new_agent_message(_reply_parts(failure.message, data)))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        # The framework has already cancelled execute(); only the final status is left to send.
        if context.task_id and context.context_id:
            await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def _reply_parts(text: str, data: JsonObject) -> list[Part]:
    """The reply text, then the trailing data part AgentEnv runners read."""
    return [new_text_part(text), new_data_part(data)]


def _extension(uri: str, description: str, params: JsonObject) -> AgentExtension:
    struct = struct_pb2.Struct()
    struct.update(params)
    return AgentExtension(uri=uri, description=description, params=struct)


def build_card(backend: AgentBackend, public_url: str) -> AgentCard:
    """The agent's card: A2A 1.0 and 0.3 on one JSON-RPC endpoint, and the four extensions."""
    rpc_url = public_url.rstrip("/") + RPC_ROUTE
    fields: JsonArray = list(backend.config_fields)
    extensions = [
        _extension(MCP_CONFIG_EXTENSION, "Register MCP servers the agent should use.", {
            "endpoint": MCP_CONFIG_ROUTE,
            "methods": {"add": {"method": "POST", "request": {"required": ["url"], "optional": ["name", "headers"]}},
                        "list": {"method": "GET"}}}),
        _extension(AGENT_CONFIG_EXTENSION, "Set or read agent configuration.", {
            "endpoint": AGENT_CONFIG_ROUTE, "supported_fields": fields,
            "methods": {"set": {"method": "POST", "request": {"supported": fields}}, "get": {"method": "GET"}}}),
        _extension(SKILL_CONFIG_EXTENSION, "Register skills made available to the agent.", {
            "endpoint": SKILL_CONFIG_ROUTE,
            "methods": {"add": {"method": "POST", "request": {"required": ["name", "description", "skill_md"]}},
                        "list": {"method": "GET"}}}),
        _extension(TRAJECTORY_EXTENSION, "Retrieve the trajectory of a task or a context.", {
            "endpoint": TRAJECTORY_ROUTE,
            "methods": {"get": {"method": "POST", "request": {"oneOf": [{"required": ["task_id"]},
                                                                       {"required": ["context_id"]}]}}}}),
    ]
    if backend.steerable:
        extensions.append(_extension(STEERING_EXTENSION, "Takes a follow-up message into a working task "
                                     "(same taskId and contextId) at the turn's next safe point.", {
                                         "task_states": ["working"], "delivery": "next_safe_point"}))
    return AgentCard(
        name=backend.name, description=backend.description, version=backend.version,
        supported_interfaces=[AgentInterface(url=rpc_url, protocol_binding="JSONRPC", protocol_version=v)
                              for v in ("1.0", "0.3")],
        capabilities=AgentCapabilities(streaming=False, push_notifications=False, extensions=extensions),
        default_input_modes=["text/plain"], default_output_modes=["text/plain", "application/json"],
        skills=[AgentSkill(id=backend.name, name=backend.name, description=backend.description or backend.name,
                           tags=["reference-agent"])],
    )


class _Extensions:
    """The HTTP handlers of the four AgentEnv extensions."""

    def __init__(self, state: AgentState) -> None:
        self.state = state

    async def mcp_config(self, request: Request) -> Response:
        if request.method == "GET":
            return JSONResponse({"mcp_servers": [s.public() for s in self.state.mcp_servers.values()]})
        parsed = await _parse(request, McpServerConfig)
        if isinstance(parsed, Response):
            return parsed
        server = self.state.add_mcp_server(parsed)
        logger.info("MCP server %s added at %s", server.name, server.url)
        return JSONResponse({"ok": True, "name": server.name,
                             "mcp_servers": [s.public() for s in self.state.mcp_servers.values()]})

    async def agent_config(self, request: Request) -> Response:
        if request.method == "GET":
            return JSONResponse({"config": self.state.config})
        body = await _json_body(request)
        if isinstance(body, Response):
            return body
        unsupported = sorted(set(body) - set(self.state.config_fields))
        if unsupported:
            return JSONResponse({"error": f"unsupported agent-config fields: {unsupported}",
                                 "unsupported": unsupported, "supported": list(self.state.config_fields)},
                                status_code=400)
        self.state.config.update(body)
        return JSONResponse({"ok": True, "config": self.state.config})

    async def skill_config(self, request: Request) -> Response:
        if request.method == "GET":
            return JSONResponse({"skills": [{"name": s.name, "description": s.description}
                                            for s in self.state.skills.values()]})
        parsed = await _parse(request, SkillConfig)
        if isinstance(parsed, Response):
            return parsed
        path = self.state.add_skill(parsed)
        return JSONResponse({"ok": True, "name": parsed.name, "path": str(path)})

    async def trajectory(self, request: Request) -> Response:
        if request.method == "GET":
            try:
                parsed = TrajectoryRequest.model_validate(dict(request.query_params))
            except ValidationError as exc:
                return _invalid(exc)
        else:
            found = await _parse(request, TrajectoryRequest)
            if isinstance(found, Response):
                return found
            parsed = found
        trajectory = self.state.trajectory(parsed)
        if trajectory is None:
            return JSONResponse({"error": "no such task or context"}, status_code=404)
        return JSONResponse(trajectory)

    def routes(self) -> list[Route]:
        both = ["GET", "POST"]
        return [Route(MCP_CONFIG_ROUTE, self.mcp_config, methods=both),
                Route(AGENT_CONFIG_ROUTE, self.agent_config, methods=both),
                Route(SKILL_CONFIG_ROUTE, self.skill_config, methods=both),
                Route(TRAJECTORY_ROUTE, self.trajectory, methods=both)]


async def _json_body(request: Request) -> JsonObject | Response:
    try:
        body = json.loads(await request.body())
    except ValueError:
        return JSONResponse({"error": "the body is not JSON"}, status_code=400)
    if not isinstance(body, dict):
        return JSONResponse({"error": "the body must be a JSON object"}, status_code=400)
    return body


async def _parse(request: Request, model: type[_M]) -> _M | Response:
    body = await _json_body(request)
    if isinstance(body, Response):
        return body
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        return _invalid(exc)


def _invalid(exc: ValidationError) -> Response:
    errors = json.loads(exc.json(include_url=False, include_input=False))
    return JSONResponse({"error": "invalid request", "errors": errors}, status_code=400)


def build_app(backend_type: type[AgentBackend], *, public_url: str, state: AgentState | None = None) -> Starlette:
    """The agent's ASGI app: card, A2A JSON-RPC (1.0 and 0.3) and the extension endpoints.

    Args:
        backend_type: the agent's backend class.
        public_url: the base URL clients reach the agent at (the card's interface URL).
        state: the agent's state; a fresh one in the cwd by default.
    """
    state = state or AgentState(config_fields=backend_type.config_fields)
    backend = backend_type(state)
    card = build_card(backend, public_url)
    executor = _Executor(backend)
    handler = SteeringRequestHandler(agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card,
                                     live=executor.live)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await backend.aclose()

    routes = [*create_agent_card_routes(card), *create_agent_card_routes(card, card_url=LEGACY_CARD_ROUTE),
              *_Extensions(state).routes(),
              *create_jsonrpc_routes(handler, RPC_ROUTE, enable_v0_3_compat=True)]
    return Starlette(routes=routes, lifespan=lifespan)


def main(backend_type: type[AgentBackend], argv: Sequence[str] | None = None) -> None:
    """Command line of a reference agent: ``--host``, ``--port``, ``--public-url``, ``--sandbox-root``."""
    parser = argparse.ArgumentParser(
        prog=f"python -m {backend_type.__module__.rsplit('.', 1)[0]}",
        description=f"Serve the {backend_type.name!r} reference agent over A2A (1.0 and 0.3).",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=9000, help="port to bind (default: 9000)")
    parser.add_argument("--public-url", default=None,
                        help="base URL put on the card (default: http://HOST:PORT)")
    parser.add_argument("--sandbox-root", type=Path, default=None,
                        help=f"where absolute sandbox paths map (default: ${SANDBOX_ROOT_VARIABLE}, else the cwd)")
    parser.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    public_url = args.public_url or f"http://{args.host}:{args.port}"
    state = AgentState(config_fields=backend_type.config_fields, root=args.sandbox_root)
    app = build_app(backend_type, public_url=public_url, state=state)
    print(f"agent {backend_type.name!r} on {public_url} (card {CARD_ROUTE}, sandbox {state.workdir}, "
          f"sandbox root {state.root})", file=sys.stderr, flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level,
                timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS)
