"""The ``llm`` reference agent's backend: the tool loop over the envs it was given, with memory.

Serve it with ``python -m prefect_agentenv.agents.llm --host 127.0.0.1 --port 9003``. Its model
endpoint comes from ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` and ``AGENTENV_MODEL`` in its
environment; its tools from the MCP servers given through the mcp-config extension (per-server
headers are sent to that server only). Each prompt runs
:func:`~prefect_agentenv.agents.llm.loop.run_tool_loop`; one A2A context is one conversation.

Agent-config: ``system_prompt``, ``model`` (overrides ``AGENTENV_MODEL``), ``max_turns``,
``max_turn_tokens`` and ``timeout_seconds`` (the budget of one prompt). The reply's data part
carries ``usage.tool_call_count``, ``model``, ``is_truncated``, ``is_timeout``,
``stop_reason`` and ``tokens``; the loop's events are the task's trajectory. A model or MCP
server that cannot be used fails the task (``model_error`` / ``tool_error``).

Also home to what every model-backed reference agent shares (the judge agent builds on it):
:class:`ModelAccess`, the endpoint a launcher hands the process, and :class:`ModelBackend`,
which turns it into one model client per process.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Generator, Mapping, Sequence
from typing import ClassVar, Self

import httpx2
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from prefect_agentenv.agents.llm.loop import DEFAULT_MAX_TURNS, LoopResult, TrajectoryEvent, run_tool_loop
from prefect_agentenv.agents.server import BASE_CONFIG_FIELDS, AgentBackend, AgentFailure, AgentState, Turn, TurnResult
from prefect_agentenv.agents.state import Trajectory
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.protocols.mcp import mcp_http_client
from prefect_agentenv.protocols.openai import ChatMessage, OpenAIClient

BASE_URL_VARIABLE = "OPENAI_BASE_URL"
API_KEY_VARIABLE = "OPENAI_API_KEY"
MODEL_VARIABLE = "AGENTENV_MODEL"


class ModelAccess(BaseModel):
    """The model endpoint of an agent process, as its launcher passed it.

    A launcher resolves the role's endpoint (block, settings or the mock) and hands the result
    to the process in ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` and ``AGENTENV_MODEL``; the
    agent's ``__main__`` reads them once with :meth:`from_environment`.
    """

    model_config = ConfigDict(frozen=True)

    base_url: str | None = None
    """API root including its version path; ``None`` when the launcher gave none."""
    api_key: SecretStr | None = None
    model: str | None = None
    """The model to request unless the agent-config names one."""

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> ModelAccess:
        """Read the launch contract from ``environ`` (empty values count as unset)."""
        key = environ.get(API_KEY_VARIABLE)
        return cls(base_url=environ.get(BASE_URL_VARIABLE) or None, api_key=SecretStr(key) if key else None,
                   model=environ.get(MODEL_VARIABLE) or None)


class ModelBackend(AgentBackend):
    """A backend that talks to a model: one client per process, the model named per prompt."""

    model_access: ClassVar[ModelAccess] = ModelAccess()

    def __init__(self, state: AgentState) -> None:
        super().__init__(state)
        self._model_client: OpenAIClient | None = None
        self._context_locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)

    @classmethod
    def with_model(cls, access: ModelAccess) -> type[Self]:
        """This backend bound to a model endpoint, for :func:`~prefect_agentenv.agents.server.main`.

        The scaffold builds backends from their class alone, so the endpoint the process was
        started with travels as a class attribute of a subclass made here.
        """
        return type(cls.__name__, (cls,), {"model_access": access, "__module__": cls.__module__})

    def model_client(self) -> OpenAIClient:
        """The process's model client.

        Raises:
            AgentFailure: the process was started without a model endpoint (``no_model``).
        """
        if self._model_client is None:
            access = self.model_access
            if access.base_url is None:
                raise AgentFailure(f"no model endpoint: start the agent with {BASE_URL_VARIABLE} set",
                                   error_type="no_model")
            self._model_client = OpenAIClient(access.base_url, api_key=access.api_key)
        return self._model_client

    def model_name(self, configured: str | None) -> str:
        """The agent-config's model, else the launcher's.

        Raises:
            AgentFailure: neither names a model (``no_model``).
        """
        name = configured or self.model_access.model
        if not name:
            raise AgentFailure(f"no model named: set {MODEL_VARIABLE} or the agent-config field 'model'",
                               error_type="no_model")
        return name

    def context_lock(self, context_id: str) -> asyncio.Lock:
        """Prompts of one context run one at a time, so each continues the history the last left."""
        return self._context_locks[context_id]

    async def aclose(self) -> None:
        if self._model_client is not None:
            await self._model_client.aclose()


class LlmConfig(BaseModel):
    """The agent-config fields the llm agent reads; unset (or null) fields take their defaults."""

    model_config = ConfigDict(extra="ignore")

    system_prompt: str | None = None
    model: str | None = None
    max_turns: int | None = Field(default=None, ge=1)
    max_turn_tokens: int | None = Field(default=None, ge=1)
    timeout_seconds: float | None = Field(default=None, gt=0)
    """Budget of one prompt; past it the agent replies with what it did so far, marked timed out."""

    @classmethod
    def of(cls, config: JsonObject) -> LlmConfig:
        """Read the agent-config.

        Raises:
            AgentFailure: a field has the wrong type or range (``bad_config``).
        """
        try:
            return cls.model_validate(config)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise AgentFailure(f"the agent-config is invalid: {problems}", error_type="bad_config") from exc


class LlmAgent(ModelBackend):
    """Answers with a model that may call the tools of every configured MCP server.

    Each A2A context is one conversation: a second prompt in the same context continues the
    messages of the first.
    """

    name = "llm"
    description = "A tool-using agent: a model with the tools of its MCP servers, one conversation per context."
    config_fields: ClassVar[tuple[str, ...]] = (*BASE_CONFIG_FIELDS, "timeout_seconds")

    def __init__(self, state: AgentState) -> None:
        super().__init__(state)
        self._histories: dict[str, list[ChatMessage]] = {}
        self._mcp_http: httpx2.AsyncClient | None = None

    async def respond(self, turn: Turn) -> TurnResult:
        config = LlmConfig.of(self.state.config)
        model, client = self.model_name(config.model), self.model_client()
        async with self.context_lock(turn.context_id):
            result = await run_tool_loop(
                turn.text, model_client=client, model=model, mcp_servers=self._servers(),
                system_prompt=config.system_prompt, max_turns=config.max_turns or DEFAULT_MAX_TURNS,
                max_turn_tokens=config.max_turn_tokens, timeout=config.timeout_seconds,
                history=self._histories.get(turn.context_id, ()), mcp_http=self._mcp(),
            )
            record_events(turn.trajectory, result.trajectory)
            if result.error is not None:
                raise _failure(result)
            self._histories[turn.context_id] = answered_history(result.messages)
        return TurnResult(result.text, tool_call_count=result.tool_call_count, data=reply_data(result))

    def _servers(self) -> list[tuple[str, str]]:
        return [(name, server.url) for name, server in self.state.mcp_servers.items()]

    def _mcp(self) -> httpx2.AsyncClient:
        """One MCP client for the process; per-server headers are added to that server's requests only."""
        if self._mcp_http is None:
            self._mcp_http = mcp_http_client()
            self._mcp_http.auth = ServerHeaders(self.state)
        return self._mcp_http

    async def aclose(self) -> None:
        await super().aclose()
        if self._mcp_http is not None:
            await self._mcp_http.aclose()


class ServerHeaders(httpx2.Auth):
    """Adds each MCP server's configured headers (tokens) to the requests sent to it, and no others.

    Looked up at request time, so servers added later through mcp-config are covered too.
    """

    def __init__(self, state: AgentState) -> None:
        self.state = state

    def auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response, None]:
        url = str(request.url)
        for server in self.state.mcp_servers.values():
            if server.headers and url.startswith(server.url.rstrip("/")):
                request.headers.update(server.headers)
                break
        yield request


def record_events(trajectory: Trajectory, events: Sequence[TrajectoryEvent]) -> None:
    """Copy the loop's events into the task's trajectory, in the scaffold's event shape."""
    for event in events:
        trajectory.record(event.kind, **event.model_dump(mode="json", exclude={"kind"}))


def reply_data(result: LoopResult) -> JsonObject:
    """The reply's data part, in the members :mod:`~prefect_agentenv.protocols.a2a_reply` reads.

    ``usage`` is the scaffold's (it holds ``tool_call_count``), so token counts go in ``tokens``.
    """
    return {"model": result.model, "is_truncated": result.is_truncated, "is_timeout": result.is_timeout,
            "stop_reason": result.stop_reason, "tokens": result.usage.model_dump()}


def answered_history(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """The conversation without tool calls that were never answered.

    A run cut off by its token cap or its timeout can end on calls that did not run; an
    endpoint rejects a conversation that carries them, so the next prompt would fail.
    """
    answered = {m.tool_call_id for m in messages if m.role == "tool"}
    kept: list[ChatMessage] = []
    for message in messages:
        if message.role == "assistant" and message.tool_calls:
            calls = [call for call in message.tool_calls if call.id in answered]
            if not calls and not message.content:
                continue
            message = message.model_copy(update={"tool_calls": calls})
        kept.append(message)
    return kept


def _failure(result: LoopResult) -> AgentFailure:
    """A loop that could not reach its model or an MCP server fails the task, saying which."""
    kind = "tool_error" if (result.error_type or "").startswith("Mcp") else "model_error"
    return AgentFailure(result.error or "the tool loop failed", error_type=kind, error_code=result.error_type,
                        tool_call_count=result.tool_call_count)
