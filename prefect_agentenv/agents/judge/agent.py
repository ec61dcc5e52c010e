"""The judge agent's backend: a model answers the grading request, opening sandbox files as it needs."""

from __future__ import annotations

import mimetypes
from pathlib import Path
from typing import ClassVar

from prefect_agentenv.agents.llm.agent import LlmConfig, ModelBackend, answered_history
from prefect_agentenv.agents.llm.loop import ModelEvent, ToolCallEvent, ToolResultEvent
from prefect_agentenv.agents.server import BASE_CONFIG_FIELDS, AgentFailure, AgentState, Turn, TurnResult
from prefect_agentenv.agents.state import Trajectory
from prefect_agentenv.exceptions import ProtocolError
from prefect_agentenv.grading.judging import judge_messages_from_text
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.protocols.openai import ChatCompletion, ChatMessage, OpenAIClient, ToolCall, ToolSpec

DEFAULT_JUDGE_TURNS = 8
"""Model calls per grading request: room to open a few files, then answer."""
MAX_TEXT_BYTES = 60_000
"""A file longer than this is shown cut: a judge needs evidence, not a whole dataset."""
MAX_LISTED_ENTRIES = 200
_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"), (b"GIF8", "image/gif"),
    (b"%PDF-", "application/pdf"), (b"PK\x03\x04", "application/zip"),
)
"""File types a name may not reveal, told by their first bytes."""

READ_FILE = ToolSpec(
    name="read_file",
    description=("Open a file you were told about, by its path (absolute, such as /tmp/file_artifacts/q3.png, "
                 "or relative to your working folder). Text files come back as text; a binary file is described "
                 "by its name, size and type; a folder lists its entries."),
    parameters={"type": "object", "properties": {"path": {"type": "string", "description": "the file's path"}},
                "required": ["path"]},
)


class JudgeAgent(ModelBackend):
    """Grades with a model: the prompt is the whole judge request, the reply the model's answer.

    Each A2A context is one grading conversation, so a corrective follow-up sent in the same
    context reaches a model that sees its earlier answer.
    """

    name = "judge"
    description = "Grades a reply against rubric criteria with a model; can open the files of its sandbox."
    config_fields: ClassVar[tuple[str, ...]] = BASE_CONFIG_FIELDS

    def __init__(self, state: AgentState) -> None:
        super().__init__(state)
        self._histories: dict[str, list[ChatMessage]] = {}

    async def respond(self, turn: Turn) -> TurnResult:
        config = LlmConfig.of(self.state.config)
        model, client = self.model_name(config.model), self.model_client()
        async with self.context_lock(turn.context_id):
            history = self._histories.get(turn.context_id)
            messages = [*(history or _opening(config.system_prompt)), *judge_messages_from_text(turn.text)]
            grading = _Grading(client, model, config, turn.trajectory, self.state)
            text = await grading.answer(messages)
            self._histories[turn.context_id] = answered_history(messages)
        return TurnResult(text, tool_call_count=grading.tool_calls,
                          data={"model": grading.model, "is_truncated": grading.truncated})


def _opening(system_prompt: str | None) -> list[ChatMessage]:
    """A configured system prompt goes before the judge's own instructions."""
    return [ChatMessage.system(system_prompt)] if system_prompt else []


class _Grading:
    """One grading request: model calls, the files opened, the trajectory."""

    def __init__(self, client: OpenAIClient, model: str, config: LlmConfig, trajectory: Trajectory,
                 state: AgentState) -> None:
        self.client = client
        self.model = model
        self.max_turns = config.max_turns or DEFAULT_JUDGE_TURNS
        self.max_turn_tokens = config.max_turn_tokens
        self.trajectory = trajectory
        self.state = state
        self.tool_calls = 0
        self.truncated = False

    async def answer(self, messages: list[ChatMessage]) -> str:
        """Call the model until it answers without opening a file; ``messages`` grows in place.

        The last allowed call offers no tool, so the model has to answer with what it has.
        """
        for number in range(1, self.max_turns + 1):
            tools = [READ_FILE] if number < self.max_turns else None
            completion = await self._chat(messages, tools, number)
            if completion.is_truncated:
                # Arguments of a cut-off call may be incomplete: answer with what was written.
                self.truncated = True
                return completion.message.content or ""
            if not completion.message.tool_calls:
                return completion.message.content or ""
            for call in completion.message.tool_calls:
                messages.append(ChatMessage.tool(call.id, self._read(call, number)))
        raise AssertionError("unreachable: the last call offers no tool")

    async def _chat(self, messages: list[ChatMessage], tools: list[ToolSpec] | None, number: int) -> ChatCompletion:
        try:
            completion = await self.client.chat(messages, model=self.model, tools=tools,
                                                max_tokens=self.max_turn_tokens)
        except ProtocolError as exc:
            raise AgentFailure(f"the judge's model could not be used: {exc}", error_type="model_error",
                               error_code=type(exc).__name__, tool_call_count=self.tool_calls) from exc
        messages.append(completion.message)
        self.model = completion.model or self.model
        event = ModelEvent(turn=number, model=completion.model, content=completion.message.content,
                           tool_calls=completion.message.tool_calls, finish_reason=completion.finish_reason,
                           usage=completion.usage)
        self.trajectory.record("model", **event.model_dump(mode="json", exclude={"kind"}))
        return completion

    def _read(self, call: ToolCall, number: int) -> str:
        """Run one ``read_file`` call (or say why it cannot run) and record both halves."""
        self.tool_calls += 1
        try:
            arguments: JsonObject | str = call.parsed_arguments()
        except ValueError:
            arguments = call.arguments
        self.trajectory.record("tool_call", **ToolCallEvent(
            turn=number, call_id=call.id, name=call.name, tool=call.name, arguments=arguments,
        ).model_dump(mode="json", exclude={"kind"}))
        if call.name != READ_FILE.name:
            content, is_error = f"there is no tool named {call.name!r}; the only tool is read_file", True
        elif not isinstance(arguments, dict) or not isinstance(path := arguments.get("path"), str):
            content, is_error = 'read_file needs {"path": "<a file path>"}', True
        else:
            content, is_error = read_sandbox_file(self.state, path)
        self.trajectory.record("tool_result", **ToolResultEvent(
            turn=number, call_id=call.id, name=call.name, is_error=is_error, content=content,
        ).model_dump(mode="json", exclude={"kind"}))
        return f"tool error: {content}" if is_error else content


def read_sandbox_file(state: AgentState, raw_path: str) -> tuple[str, bool]:
    """What the judge's model sees of a file: ``(content, is_error)``; never raises.

    Absolute sandbox paths map under the sandbox root (see
    :func:`~prefect_agentenv.runtime.resources.sandbox.sandbox_path`). Text comes back as text (cut past
    ``MAX_TEXT_BYTES``); a binary file is described by name, size and type, since its bytes
    mean nothing to a text model; a folder lists its entries.
    """
    try:
        path = state.path(raw_path)
    except ValueError as exc:
        return str(exc), True
    try:
        if path.is_dir():
            return _listing(raw_path, path), False
        if not path.is_file():
            return f"there is no file at {raw_path}", True
        size = path.stat().st_size
        with path.open("rb") as handle:
            head = handle.read(MAX_TEXT_BYTES)
    except OSError as exc:
        return f"{raw_path} cannot be read: {exc.strerror or exc}", True
    text = _as_text(head, cut=size > len(head))
    if text is None:
        return f"{path.name} is a binary file ({size} bytes, type {_file_type(path, head)}); " \
               "its contents cannot be shown as text", False
    if size > len(head):
        text += f"\n[... the file goes on: {size - len(head)} more bytes not shown ...]"
    return text, False


def _as_text(head: bytes, *, cut: bool) -> str | None:
    """The bytes as UTF-8 text, or None when they are binary (a NUL byte, or not UTF-8)."""
    if b"\x00" in head:
        return None
    try:
        return head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A cut can split the last character; that alone does not make the file binary.
        if cut and exc.start >= len(head) - 3:
            return head[:exc.start].decode("utf-8", errors="replace")
        return None


def _file_type(path: Path, head: bytes) -> str:
    guessed = mimetypes.guess_type(path.name)[0]
    if guessed:
        return guessed
    return next((kind for signature, kind in _SIGNATURES if head.startswith(signature)), "application/octet-stream")


def _listing(raw_path: str, path: Path) -> str:
    entries = sorted(f"{p.name}/" if p.is_dir() else p.name for p in path.iterdir())
    shown = entries[:MAX_LISTED_ENTRIES]
    more = f"\n[... {len(entries) - len(shown)} more entries ...]" if len(entries) > len(shown) else ""
    return f"{raw_path} is a folder with {len(entries)} entries:\n" + "\n".join(shown) + more
