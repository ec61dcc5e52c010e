"""The scripted agent's plan: its model, and where a prompt's plan comes from."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from prefect_agentenv.agents.server import AgentFailure
from prefect_agentenv.jsontypes import JsonObject

PLAN_FILE = "plan.json"
_PLAN_LINE = re.compile(r"^[ \t]*PLAN:[ \t]*", re.MULTILINE)

PlanSource = Literal["prompt", "agent-config", "plan.json", "default"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PlannedToolCall(_Strict):
    """One MCP tool call."""

    server: str | None = None
    """Name of the configured MCP server; optional when only one server has the tool."""
    tool: str = Field(min_length=1)
    arguments: JsonObject = Field(default_factory=dict)


class PlannedFile(_Strict):
    """A file to write into the sandbox."""

    path: str = Field(min_length=1)
    content: str = ""


class PlanFailure(_Strict):
    """How the task should fail."""

    error_type: str = "scripted_failure"
    message: str = "the plan says to fail"
    error_code: str | None = None


class Plan(_Strict):
    """What the scripted agent does with one prompt."""

    tool_calls: list[PlannedToolCall] = Field(default_factory=list)
    files: list[PlannedFile] = Field(default_factory=list)
    reply: str = "Done."
    """A ``str.format`` template over ``tool_results``, ``prompt``, ``turn`` and ``steered`` (the
    messages sent into the running task, one per line)."""
    fail: PlanFailure | None = None
    sleep_seconds: float = Field(default=0.0, ge=0)
    die: bool = False


DEFAULT_PLAN = Plan(reply="I received: {prompt}")


def choose_plan(prompt: str, config: JsonObject, workdir: Path, turn: int) -> tuple[Plan, PlanSource]:
    """The plan for this prompt and where it came from (see the package docstring for the order).

    Raises:
        AgentFailure: the plan found is not valid JSON or not a valid plan (``bad_plan``).
    """
    inline = _plan_in_prompt(prompt)
    if inline is not None:
        return _validated(inline, "the PLAN: line"), "prompt"
    if config.get("plan") is not None:
        return _validated(_for_turn(config["plan"], turn), "agent-config plan"), "agent-config"
    path = workdir / PLAN_FILE
    if path.is_file():
        try:
            loaded = json.loads(path.read_text())
        except ValueError as exc:
            raise AgentFailure(f"{PLAN_FILE} is not JSON: {exc}", error_type="bad_plan") from exc
        return _validated(_for_turn(loaded, turn), PLAN_FILE), "plan.json"
    return DEFAULT_PLAN, "default"


def _plan_in_prompt(prompt: str) -> Any:
    match = _PLAN_LINE.search(prompt)
    if match is None:
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(prompt[match.end():].lstrip())
    except ValueError as exc:
        raise AgentFailure(f"the PLAN: line is not followed by a JSON object: {exc}", error_type="bad_plan") from exc
    return value


def _for_turn(value: Any, turn: int) -> Any:
    """A list of plans gives the n-th to the n-th prompt of a context; the last one repeats."""
    if isinstance(value, list):
        if not value:
            raise AgentFailure("the list of plans is empty", error_type="bad_plan")
        return value[min(turn, len(value)) - 1]
    return value


def _validated(value: Any, where: str) -> Plan:
    try:
        return Plan.model_validate(value)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'plan'}: {e['msg']}" for e in exc.errors())
        raise AgentFailure(f"{where} is not a valid plan: {problems}", error_type="bad_plan") from exc
