"""The transcript of one task run: what the agent was asked, what it did, how it was graded.

It is the ``transcript`` key of ``report.json`` and the source of the transcript artifact and
of the HTML report's drill-down page. Every long value is cut to a bound, with its full size
said (:class:`Clip`), so one chatty tool cannot make a report unreadable.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from prefect_agentenv.attribute_docs import attribute_docstrings

MAX_VALUE_CHARS = 4000
"""Beyond this a value (argument, tool result, reply) is cut in the transcript."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=attribute_docstrings)


class Clip(_Model):
    """A text value, cut when long."""

    text: str
    """The value, or its first characters when ``cut``."""
    size: int
    """Characters of the whole value."""
    cut: bool = False
    """Whether ``text`` is only the start of the value."""

    @classmethod
    def of(cls, value: str, limit: int = MAX_VALUE_CHARS) -> Clip:
        """Clip ``value`` to ``limit`` characters."""
        if len(value) <= limit:
            return cls(text=value, size=len(value))
        return cls(text=value[:limit], size=len(value), cut=True)

    def shown(self, limit: int | None = None) -> str:
        """The text with a note of the full size when it (or a tighter ``limit``) cuts it."""
        text = self.text if limit is None else self.text[:limit]
        if self.cut or len(text) < len(self.text):
            return f"{text}… [cut: {self.size:,} characters in all]"
        return text


class StepRun(_Model):
    """One step of the document, as it ran."""

    id: str
    type: str
    state: str
    started_at: str | None = None
    duration_s: float | None = None
    attempts: int = 0
    error: str | None = None


class ToolCall(_Model):
    """One tool call the agent made, with what the tool returned."""

    name: str
    server: str | None = None
    """The MCP server (env) that offers the tool, when the agent said."""
    arguments: Clip
    """The arguments as JSON."""
    result: Clip | None = None
    """What the tool returned; ``None`` when no result was recorded."""
    is_error: bool = False


class Turn(_Model):
    """One turn of a conversation: the agent answering a message, or the user answering the agent."""

    index: int
    """The exchange it belongs to: the agent's turn n and the user's answer to it share n."""
    role: Literal["agent", "user"]
    message: Clip | None = None
    """What was sent to the agent (agent turns) or what the user said (user turns)."""
    reply: Clip | None = None
    """The agent's reply (agent turns)."""
    state: str | None = None
    tool_call_count: int | None = None
    done: bool | None = None
    """The user said the conversation is over (user turns)."""
    error: str | None = None


class Tokens(_Model):
    """Tokens the agent's model calls used, summed over its trajectory."""

    prompt: int = 0
    completion: int = 0
    total: int = 0


class PromptTranscript(_Model):
    """One ``prompt_agent`` step: the prompt, every turn, every tool call and the reply."""

    prompt_id: str
    step_id: str | None = None
    agent_name: str | None = None
    prompt: Clip
    reply: Clip
    turns: list[Turn] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_count: int | None = None
    """As the agent reported it (may differ from ``len(tool_calls)`` when the trajectory is partial)."""
    model: str | None = None
    mock: bool = False
    """The model was the built-in mock model."""
    tokens: Tokens | None = None
    """``None`` when neither the trajectory nor the agent's reply says anything of tokens."""
    cost_usd: float | None = None
    """The prompt's cost, as the agent reported it or as the model block's price table priced it."""
    error: str | None = None
    is_truncated: bool = False
    is_timeout: bool = False
    trajectory_url: str | None = None
    """Where the agent's whole trajectory is stored."""
    notes: list[str] = Field(default_factory=list)
    """Why a part is missing (no trajectory, an unreadable record)."""


def _absent(value: object) -> bool:
    return value is None


class PanelVerdict(_Model):
    """One panel judge's verdict on a row."""

    judge: str
    result: str
    """``pass``, ``fail``, ``partial``, or ``unscored`` when the judge's answer could not be read."""
    score: float | None = None
    justification: str | None = None


class VerifierRow(_Model):
    """One row of a verifier: a criterion or an assertion, with its verdict."""

    id: str
    label: str | None = None
    axis: str | None = None
    result: str | None = None
    score: float | None = None
    weight: float | None = None
    justification: str | None = None
    judges: list[PanelVerdict] | None = Field(default=None, exclude_if=_absent)
    """Every panel judge's verdict (a panel's rubric rows only)."""
    disagreement: float | None = Field(default=None, exclude_if=_absent)
    """Share of panel judge pairs that disagree on this row."""


class PanelInfo(_Model):
    """A panel of judges: its rule, and how much its judges disagreed."""

    rule: str
    judges: list[str]
    disagreement: float | None = None
    """Mean share of judge pairs that disagree, over the scored criteria."""
    split_criteria: list[str] = Field(default_factory=list)
    unscored: list[str] = Field(default_factory=list)
    """Criteria no judge could grade readably: neither passed nor failed."""
    unreadable_judges: list[str] = Field(default_factory=list)


class JudgeInfo(_Model):
    """Who graded a rubric: the judge agent or model."""

    mode: str | None = None
    model: str | None = None
    mock: bool = False
    agent_name: str | None = None
    attempts: int | None = None
    trajectory_url: str | None = None
    """The judge's own trajectory (its prompt and answer)."""


class VerifierTranscript(_Model):
    """One verifier's rows and score."""

    verifier_id: str
    step_id: str | None = None
    format: str | None = None
    score: float | None = None
    weight: float | None = None
    aggregator: str | None = None
    skipped: str | None = None
    """Why it was not scored, when it was skipped."""
    error: str | None = None
    rows: list[VerifierRow] = Field(default_factory=list)
    judge: JudgeInfo | None = None
    panel: PanelInfo | None = Field(default=None, exclude_if=_absent)


class RecordChange(_Model):
    """One record (or value) that differs between two snapshots of an env."""

    change: Literal["added", "removed", "changed"]
    path: str
    """Where in the exported state, e.g. ``sent[msg-3]`` or ``account.name``."""
    before: Clip | None = None
    after: Clip | None = None


class EnvChanges(_Model):
    """What changed in an env between two of its snapshots."""

    env_id: str
    before_step: str
    after_step: str
    before_url: str | None = None
    after_url: str | None = None
    changes: list[RecordChange] = Field(default_factory=list)
    more: int = 0
    """Changes left out beyond the bound."""


class FileLink(_Model):
    """A file the run collected from an agent's sandbox."""

    name: str
    url: str
    step_id: str


class ModelCallLine(_Model):
    """One model call of the run, as the run's model gateway relayed and counted it."""

    role: str
    """``agent``, ``judge``, ``user``…: who made it."""
    wire: str
    """``chat``, ``responses`` or ``messages``."""
    model: str | None = None
    status: int
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    latency_seconds: float
    failure: str | None = None
    """Why it did not end normally (``limit``, ``infrastructure``, …); ``None`` when it did."""
    limit: str | None = None
    """The limit that refused it."""


class Transcript(_Model):
    """Everything a reader needs to see what happened in a task run."""

    task_id: str
    steps: list[StepRun] = Field(default_factory=list)
    """In the order they started."""
    prompts: list[PromptTranscript] = Field(default_factory=list)
    verifiers: list[VerifierTranscript] = Field(default_factory=list)
    env_changes: list[EnvChanges] = Field(default_factory=list)
    files: list[FileLink] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    """The run's error and every failed step's error."""
    model_calls: list[ModelCallLine] = Field(default_factory=list)
    """Every model call of the run, in the order they ended (counted by the run's gateway)."""
