"""The tool loop of the reference LLM agent: ask the model, run the tools it calls, repeat.

A pure async function with no A2A in it, so the agent server, the judge agent and tests share
it. Tools come from MCP servers (one session per server for the loop's duration) and are
offered to the model under their own names, or as ``<server>__<tool>`` when two servers offer
the same name.

How a loop ends (``LoopResult.stop_reason``):

* ``completed`` — the model answered without calling a tool;
* ``length`` / ``max_turn_tokens`` — a response was cut off by its token limit (``length``
  finish, or more tokens than ``max_turn_tokens``): the loop stops before the next model call,
  the cut-off response's tool calls are **not** run (their arguments may be incomplete), and
  the result is truncated;
* ``max_turns`` — the model was called ``max_turns`` times and still wanted tools: the last
  turn's tool calls run, then the loop stops, truncated;
* ``timeout`` — ``timeout`` seconds passed: whatever was done so far is returned with
  ``is_timeout``;
* ``error`` — the model endpoint or an MCP server could not be used (``error`` says why).

A failing tool is not an error of the loop: its message goes back to the model as the tool's
result, as it would for any agent.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import Sequence
from contextlib import AsyncExitStack
from typing import Annotated, Literal

import httpx2
from pydantic import BaseModel, Field

from prefect_agentenv.exceptions import McpError, ProtocolError
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.protocols.mcp import McpClient, ToolCallResult, ToolInfo, mcp_http_client, mcp_session
from prefect_agentenv.protocols.openai import ChatCompletion, ChatMessage, OpenAIClient, ToolCall, ToolSpec, Usage

DEFAULT_MAX_TURNS = 20
MAX_TOOL_RESULT_CHARS = 20_000
"""A tool that returns a whole mailbox must not blow the model's context in one turn."""
_TOOL_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_TOOL_NAME_MAX = 64
"""OpenAI-compatible endpoints accept tool names of at most 64 characters of [A-Za-z0-9_-]."""

StopReason = Literal["completed", "length", "max_turn_tokens", "max_turns", "timeout", "error"]


class ModelEvent(BaseModel):
    """One model response."""

    kind: Literal["model"] = "model"
    turn: int
    model: str
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)


class ToolCallEvent(BaseModel):
    """A tool call the loop made (or tried to make) for the model."""

    kind: Literal["tool_call"] = "tool_call"
    turn: int
    call_id: str
    name: str
    """The name the model used."""
    server: str | None = None
    """The MCP server that offers it; None when no server does."""
    tool: str | None = None
    """The tool's own name on that server."""
    arguments: JsonObject | str = Field(default_factory=dict)
    """The parsed arguments, or the raw text when it was not a JSON object."""


class ToolResultEvent(BaseModel):
    """What a tool call returned, as given back to the model."""

    kind: Literal["tool_result"] = "tool_result"
    turn: int
    call_id: str
    name: str
    is_error: bool = False
    content: str = ""
    structured: JsonObject | None = None


TrajectoryEvent = Annotated[ModelEvent | ToolCallEvent | ToolResultEvent, Field(discriminator="kind")]


class LoopResult(BaseModel):
    """The outcome of one run of the loop; partial when it stopped early."""

    text: str = ""
    """The final reply: the last model response's text."""
    trajectory: list[TrajectoryEvent] = Field(default_factory=list)
    messages: list[ChatMessage] = Field(default_factory=list)
    """The whole conversation, to continue it on the next turn of a multi-turn exchange."""
    tool_call_count: int = 0
    is_truncated: bool = False
    is_timeout: bool = False
    stop_reason: StopReason = "completed"
    error: str | None = None
    error_type: str | None = None
    """The exception's class name when ``error`` is set (``ProtocolError``, ``McpError``…)."""
    model: str
    """The model that answered, as the endpoint named it (``mock`` for the mock model)."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens summed over every model call."""


class Toolbox:
    """The tools of every MCP server, under the names the model sees."""

    def __init__(self) -> None:
        self._tools: dict[str, tuple[str, McpClient, str]] = {}
        self.specs: list[ToolSpec] = []

    def add_all(self, listed: Sequence[tuple[str, McpClient, Sequence[ToolInfo]]]) -> None:
        """Name every tool: as-is when unique and valid, else ``<server>__<tool>``."""
        counts = Counter(tool.name for _, _, tools in listed for tool in tools)
        for server, session, tools in listed:
            for tool in tools:
                wanted = tool.name if counts[tool.name] == 1 else f"{server}__{tool.name}"
                name = self._free_name(_TOOL_NAME_UNSAFE.sub("_", wanted)[:_TOOL_NAME_MAX])
                self._tools[name] = (server, session, tool.name)
                self.specs.append(ToolSpec(name=name, description=tool.description,
                                           parameters=tool.input_schema or {"type": "object", "properties": {}}))

    def _free_name(self, name: str) -> str:
        candidate, n = name, 2
        while candidate in self._tools:
            suffix = f"_{n}"
            candidate, n = name[: _TOOL_NAME_MAX - len(suffix)] + suffix, n + 1
        return candidate

    def route(self, name: str) -> tuple[str, McpClient, str] | None:
        """``(server, session, tool)`` for an exposed name."""
        return self._tools.get(name)


async def run_tool_loop(
    prompt: str,
    *,
    model_client: OpenAIClient,
    model: str,
    mcp_servers: Sequence[tuple[str, str]] = (),
    system_prompt: str | None = None,
    max_turns: int = DEFAULT_MAX_TURNS,
    max_turn_tokens: int | None = None,
    timeout: float | None = None,
    temperature: float | None = None,
    history: Sequence[ChatMessage] = (),
    mcp_http: httpx2.AsyncClient | None = None,
) -> LoopResult:
    """Answer ``prompt`` with the model, calling the MCP servers' tools as it asks.

    Args:
        prompt: the user message of this turn.
        model_client: the client of the model endpoint.
        model: the model to request.
        mcp_servers: ``(name, mcp_url)`` pairs; the name prefixes tool names that clash.
        system_prompt: sent first, unless ``history`` already starts with a system message.
        max_turns: model calls allowed in this loop (at least 1).
        max_turn_tokens: ``max_tokens`` of each model call; a response that hits it truncates
            the run.
        timeout: seconds for the whole loop, tool calls included; ``None`` waits forever.
        temperature: sampling temperature; the endpoint's default when ``None``.
        history: earlier messages of the conversation (from a previous ``LoopResult.messages``).
        mcp_http: the run's shared httpx2 client for MCP; a private one is used when omitted.

    Returns:
        The reply, trajectory and counters; never raises for a model or tool failure (see
        ``error``), so a caller can always report what happened.
    """
    run = _Run(model, max(1, max_turns), max_turn_tokens)
    run.start(prompt, system_prompt, history)
    try:
        async with asyncio.timeout(timeout) as deadline:
            async with AsyncExitStack() as stack:
                http = mcp_http if mcp_http is not None else await stack.enter_async_context(mcp_http_client())
                toolbox = await _open_toolbox(stack, mcp_servers, http, timeout)
                await run.loop(model_client, toolbox, temperature)
    except TimeoutError:
        if not deadline.expired():
            raise
        run.stop("timeout", is_truncated=False)
        run.result.is_timeout = True
    except ProtocolError as exc:
        run.stop("error", is_truncated=False)
        run.result.error, run.result.error_type = str(exc), type(exc).__name__
    return run.result


async def _open_toolbox(stack: AsyncExitStack, servers: Sequence[tuple[str, str]], http: httpx2.AsyncClient,
                        timeout: float | None) -> Toolbox:
    """Open one session per server, list their tools, and name them for the model."""
    listed: list[tuple[str, McpClient, Sequence[ToolInfo]]] = []
    for name, url in servers:
        session = await stack.enter_async_context(mcp_session(url, http=http, timeout=timeout or 60.0))
        listed.append((name, session, await session.list_tools()))
    toolbox = Toolbox()
    toolbox.add_all(listed)
    return toolbox


class _Run:
    """The loop's state, kept outside the timeout scope so a timed-out run still reports it."""

    def __init__(self, model: str, max_turns: int, max_turn_tokens: int | None) -> None:
        self.requested_model = model
        self.max_turns = max_turns
        self.max_turn_tokens = max_turn_tokens
        self.result = LoopResult(model=model)

    def start(self, prompt: str, system_prompt: str | None, history: Sequence[ChatMessage]) -> None:
        messages = list(history)
        if system_prompt and not (messages and messages[0].role == "system"):
            messages.insert(0, ChatMessage.system(system_prompt))
        messages.append(ChatMessage.user(prompt))
        self.result.messages = messages

    def stop(self, reason: StopReason, *, is_truncated: bool) -> None:
        self.result.stop_reason = reason
        self.result.is_truncated = is_truncated

    async def loop(self, client: OpenAIClient, toolbox: Toolbox, temperature: float | None) -> None:
        for turn in range(1, self.max_turns + 1):
            completion = await client.chat(self.result.messages, model=self.requested_model,
                                           tools=toolbox.specs or None, max_tokens=self.max_turn_tokens,
                                           temperature=temperature)
            self._record(turn, completion)
            if self._hit_token_cap(completion):
                self.stop("max_turn_tokens" if self.max_turn_tokens is not None else "length", is_truncated=True)
                return
            if not completion.message.tool_calls:
                self.stop("completed", is_truncated=False)
                return
            for call in completion.message.tool_calls:
                await self._call_tool(turn, call, toolbox)
        self.stop("max_turns", is_truncated=True)

    def _record(self, turn: int, completion: ChatCompletion) -> None:
        message = completion.message
        self.result.messages.append(message)
        self.result.text = message.content or ""
        self.result.model = completion.model or self.result.model
        usage = self.result.usage
        self.result.usage = Usage(prompt_tokens=usage.prompt_tokens + completion.usage.prompt_tokens,
                                  completion_tokens=usage.completion_tokens + completion.usage.completion_tokens,
                                  total_tokens=usage.total_tokens + completion.usage.total_tokens)
        self.result.trajectory.append(ModelEvent(turn=turn, model=completion.model, content=message.content,
                                                 tool_calls=message.tool_calls, finish_reason=completion.finish_reason,
                                                 usage=completion.usage))

    def _hit_token_cap(self, completion: ChatCompletion) -> bool:
        """Cut off by the endpoint, or longer than the cap (for endpoints that ignore it)."""
        over = self.max_turn_tokens is not None and completion.usage.completion_tokens > self.max_turn_tokens
        return completion.is_truncated or over

    async def _call_tool(self, turn: int, call: ToolCall, toolbox: Toolbox) -> None:
        """Run one call and give its result (or why it could not run) back to the model."""
        route = toolbox.route(call.name)
        server, session, tool = route if route is not None else (None, None, None)
        try:
            arguments: JsonObject | str = call.parsed_arguments()
        except ValueError:
            arguments = call.arguments
        self.result.tool_call_count += 1
        self.result.trajectory.append(ToolCallEvent(turn=turn, call_id=call.id, name=call.name, server=server,
                                                    tool=tool, arguments=arguments))
        if session is None or tool is None:
            outcome = _failed(call.name, f"there is no tool named {call.name!r}")
        elif isinstance(arguments, str):
            outcome = _failed(call.name, f"the arguments are not a JSON object: {arguments[:200]}")
        else:
            try:
                outcome = await session.call_tool(tool, arguments)
            except McpError as exc:
                outcome = _failed(call.name, str(exc))
        content = _tool_message(outcome)
        self.result.messages.append(ChatMessage.tool(call.id, content))
        self.result.trajectory.append(ToolResultEvent(turn=turn, call_id=call.id, name=call.name,
                                                      is_error=outcome.is_error, content=content,
                                                      structured=outcome.structured))


def _failed(name: str, message: str) -> ToolCallResult:
    return ToolCallResult(tool=name, is_error=True, text=message)


def _tool_message(outcome: ToolCallResult) -> str:
    """The tool message the model reads: the text (or structured JSON), marked when it failed."""
    text = outcome.text or (json.dumps(outcome.structured) if outcome.structured is not None else "")
    if outcome.is_error:
        text = f"tool error: {text}"
    if len(text) > MAX_TOOL_RESULT_CHARS:
        text = text[:MAX_TOOL_RESULT_CHARS] + f"\n[... {len(text) - MAX_TOOL_RESULT_CHARS} characters cut ...]"
    return text
