"""Reading an agent's reply: A2A 1.0 and 0.3 Task/Message JSON as one typed :class:`AgentReply`.

AgentEnv-style agents answer with a Task whose ``status.message`` holds the reply: text parts,
then a trailing data part with ``usage.tool_call_count`` (and often a trajectory location), or
``error_type/error_code/error_message`` when they failed. 1.x servers send the same over
protobuf JSON: states spelled ``TASK_STATE_*``, parts without ``kind``, and every number a
float (a protobuf ``Value``), which is turned back into an int where it is whole.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_snake

from prefect_agentenv.jsontypes import JsonObject, JsonValue

ProtocolVersion = Literal["1.0", "0.3"]
TaskStateName = Literal["submitted", "working", "input-required", "auth-required", "completed", "failed",
                        "canceled", "rejected", "unknown"]
TERMINAL_STATES: frozenset[str] = frozenset({"completed", "failed", "canceled", "rejected"})
WAITING_STATES: frozenset[str] = frozenset({"input-required", "auth-required"})
"""The agent waits for the caller: polling stops, the reply says what it asks."""
_FAILED_STATES = frozenset({"failed", "canceled", "rejected"})
_TRAJECTORY_KEYS = ("trajectory", "trajectory_url", "trajectory_uri", "trajectory_path", "trajectory_location")


class AgentErrorInfo(BaseModel):
    """Why an agent's task failed, as the agent (or its final state) said."""

    model_config = ConfigDict(frozen=True)

    type: str
    """``error_type`` from the reply's data part, else ``task_failed``/``task_rejected``/…"""
    code: str | None = None
    message: str = ""


class AgentReply(BaseModel):
    """An agent's answer to one prompt (or the task as last seen), whatever the A2A dialect."""

    text: str = ""
    """The reply's text parts, joined by newlines."""
    state: TaskStateName = "unknown"
    task_id: str | None = None
    context_id: str | None = None
    tool_call_count: int | None = None
    """``usage.tool_call_count`` from the trailing data part, when the agent sent it."""
    error: AgentErrorInfo | None = None
    is_truncated: bool = False
    is_timeout: bool = False
    trajectory: str | None = None
    """Where the agent stored its trajectory, if it said."""
    model: str | None = None
    usage: JsonObject = Field(default_factory=dict)
    """The data part's ``usage`` object as sent (whole numbers as ints)."""
    data: JsonObject = Field(default_factory=dict)
    """The trailing data part as sent (whole numbers as ints)."""
    protocol_version: ProtocolVersion | None = None

    @property
    def done(self) -> bool:
        """The task is over or waits for the caller; polling stops here."""
        return self.state in TERMINAL_STATES or self.state in WAITING_STATES


def reply_from_result(result: JsonObject, version: ProtocolVersion | None = None) -> AgentReply:
    """Read a Task or Message (1.0 or 0.3 JSON) as an :class:`AgentReply`.

    The reply is the task's ``status.message``; when that has no text, the artifacts, then the
    last agent message of the history. The data part that carries ``usage`` or ``error_*`` is
    the last data part of that message (else of the artifacts, else the task's metadata).
    """
    state: TaskStateName = "completed"
    artifacts: list[JsonObject] = []
    metadata: JsonObject = {}
    if _is_message(result):
        parts = _parts(result)
        task_id, context_id = _get(result, "taskId"), _get(result, "contextId")
    else:
        status = _obj(result.get("status"))
        state = _state(status.get("state"))
        parts = _parts(_obj(status.get("message")))
        task_id, context_id = result.get("id"), _get(result, "contextId")
        artifacts = [p for a in _objects(result.get("artifacts")) for p in _parts(a)]
        metadata = _obj(result.get("metadata"))
        if not _texts(parts):
            parts = parts + (artifacts if _texts(artifacts) else _last_agent_message(result))
    data = _trailing_data(parts) or _trailing_data(artifacts) or _obj(_whole_numbers(metadata))
    usage = _obj(data.get("usage"))
    text = "\n".join(_texts(parts))
    return AgentReply(
        text=text, state=state, task_id=_str(task_id or None), context_id=_str(context_id or None),
        tool_call_count=_int(usage.get("tool_call_count", data.get("tool_call_count"))),
        error=_error(data, state, text), is_truncated=_flag(data, usage, "is_truncated", "truncated"),
        is_timeout=_flag(data, usage, "is_timeout", "timed_out"), trajectory=_trajectory(data, metadata),
        model=_str(usage.get("model", data.get("model"))), usage=usage, data=data, protocol_version=version,
    )


def _obj(value: JsonValue) -> JsonObject:
    """``value`` when it is a JSON object, else an empty one: agents omit or garble members."""
    return value if isinstance(value, dict) else {}


def _objects(value: JsonValue) -> list[JsonObject]:
    """The objects of a JSON array; anything else (null, a garbled member) holds none."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _is_message(result: JsonObject) -> bool:
    kind = result.get("kind")
    if kind:
        return bool(kind == "message")
    return _get(result, "messageId") is not None and "status" not in result


def _get(holder: JsonObject, camel: str) -> JsonValue:
    """A member by its camelCase name, else its snake_case one (peers write either)."""
    value = holder.get(camel)
    return value if value is not None else holder.get(to_snake(camel))


def _state(value: JsonValue) -> TaskStateName:
    name = str(value or "unknown").lower().removeprefix("task_state_").replace("_", "-")
    name = {"cancelled": "canceled", "unspecified": "unknown"}.get(name, name)
    known: tuple[TaskStateName, ...] = ("submitted", "working", "input-required", "auth-required", "completed",
                                        "failed", "canceled", "rejected", "unknown")
    return next((k for k in known if k == name), "unknown")


def _parts(holder: JsonObject) -> list[JsonObject]:
    return _objects(holder.get("parts"))


def _kind(part: JsonObject) -> str:
    if part.get("kind"):
        return str(part["kind"])
    for key in ("text", "data"):
        if key in part:
            return key
    return "file"


def _texts(parts: list[JsonObject]) -> list[str]:
    return [str(p.get("text", "")) for p in parts if _kind(p) == "text"]


def _last_agent_message(task: JsonObject) -> list[JsonObject]:
    for message in reversed(_objects(task.get("history"))):
        if str(message.get("role", "")).lower() in ("agent", "role_agent"):
            return _parts(message)
    return []


def _trailing_data(parts: list[JsonObject]) -> JsonObject:
    found = [p.get("data") for p in parts if _kind(p) == "data" and isinstance(p.get("data"), dict)]
    return _obj(_whole_numbers(found[-1])) if found else {}


def _whole_numbers(value: JsonValue) -> JsonValue:
    """1.x servers carry data parts as protobuf Values, which turn every number into a float."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _whole_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole_numbers(v) for v in value]
    return value


def _error(data: JsonObject, state: str, text: str) -> AgentErrorInfo | None:
    nested = _obj(data.get("error"))
    kind = data.get("error_type") or nested.get("type")
    code = data.get("error_code") or nested.get("code")
    message = data.get("error_message") or nested.get("message")
    if kind or code or message:
        return AgentErrorInfo(type=str(kind or code or "agent_error"), code=_str(code), message=str(message or text))
    if state in _FAILED_STATES:
        return AgentErrorInfo(type=f"task_{state}", message=text or f"the agent ended the task {state}")
    return None


def _flag(data: JsonObject, usage: JsonObject, *names: str) -> bool:
    return any(bool(source.get(name)) for source in (data, usage) for name in names)


def _trajectory(data: JsonObject, metadata: JsonObject) -> str | None:
    for source in (data, metadata):
        for key in _TRAJECTORY_KEYS:
            value = source.get(key)
            if isinstance(value, str) and value:
                return value
    return None


def _int(value: JsonValue) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        return int(float(value))
    except ValueError:
        return None


def _str(value: JsonValue) -> str | None:
    return None if value is None else str(value)
