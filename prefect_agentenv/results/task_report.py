"""A task run's report: a stable JSON contract that other tools read, and the file it is written to.

The engine builds it (``engine.reporting``); the Prefect UI shows it (``flows.ui.task``)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_serializer,
)

from prefect_agentenv.context import RunContext, StepRecord
from prefect_agentenv.gateway.ledger import CallRecord, RunTotals
from prefect_agentenv.grading.judge_records import verdicts_of
from prefect_agentenv.grading.outcome import Outcome
from prefect_agentenv.jsontypes import JsonObject, JsonValue
from prefect_agentenv.redaction import MASK, Redactor
from prefect_agentenv.runtime.resources.teardown import TeardownRecord
from prefect_agentenv.transcript import Transcript
from prefect_agentenv.usage import TokenUsage

REDACTED = MASK


class ScoringSummary(BaseModel):
    """Where the verifiers ran: the document's ``scoring`` as the run applied it."""

    mode: Literal["shared", "isolated"]
    attempts: int | None = None
    """Isolated scoring: how many scoring attempts ran (1 + the retries used)."""
    network: str | None = None
    """The network policy of the scoring processes (``open``, ``loopback``, ``allowlist``)."""
    env: list[str] = Field(default_factory=list)
    """The names of the scoring env variables (never their values)."""


class ModelCalls(BaseModel):
    """Every model call of the task run, as its model gateway relayed and counted it."""

    totals: RunTotals
    """All roles together (agents, judges, user simulators)."""
    by_role: dict[str, RunTotals] = Field(default_factory=dict)
    reported: TokenUsage | None = None
    """What the agents themselves reported for their prompts (their replies or trajectories)."""
    mismatch: str | None = None
    """Set when the agents' own figures and the gateway's differ: the gateway's are the ones counted."""
    calls: list[CallRecord] = Field(default_factory=list)
    """One record per call, in the order they ended."""

    def usage(self) -> TokenUsage:
        """The totals in the terms benchmark results use."""
        return self.totals.usage().model_copy(update={"source": "gateway"})


class TaskReport(BaseModel):
    """What a task run did and how it scored. Other tools read this: keep it stable."""

    task_id: str
    flow_run_id: str | None = None
    status: Literal["completed", "failed"]
    outcome: Outcome
    score: float | None = None
    started_at: str
    duration_s: float
    context: RunContext
    steps: list[StepRecord]
    teardown: list[TeardownRecord] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    error: str | None = None
    """Why the run failed, when it did."""
    stop_reason: str | None = None
    """``SIGINT``, ``SIGTERM`` or ``cancelled`` when the run was stopped from outside (status failed)."""
    scoring: ScoringSummary | None = None
    """Where the verifiers ran, when the document says (its ``scoring``)."""
    transcript: Transcript | None = None
    """What happened, step by step: prompts, turns, tool calls, replies, verdicts, env changes, files
    (docs/reading-results.md). ``None`` when it could not be built."""
    model_calls: ModelCalls | None = None
    """The run's model calls as its gateway counted them; ``None`` when no step called a model."""

    _secrets: frozenset[str] = PrivateAttr(default=frozenset())
    """The run's secret values: every string the report writes has them masked."""

    @model_serializer(mode="wrap")
    def _redacted(self, handler: SerializerFunctionWrapHandler) -> Any:
        """The report as written, with every secret value masked, keys included (see ``redaction``).

        Returns ``Any``: what the fields serialize to (Python values, or JSON in JSON mode), as is."""
        written = handler(self)
        return Redactor(self._secrets).data(written) if self._secrets else written

    @field_validator("context", mode="wrap")
    @classmethod
    def _read_context(cls, value: object, handler: ValidatorFunctionWrapHandler) -> RunContext:
        """A report from another version is read liberally: keys this version does not know are dropped."""
        try:
            return handler(value)
        except ValidationError as exc:
            unknown = [e["loc"] for e in exc.errors() if e["type"] == "extra_forbidden"]
            if not unknown or not isinstance(value, dict):
                raise
            return handler(_without(value, unknown))


def write_report(report: TaskReport, path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(report.model_dump(mode="json"), indent=2) + "\n", encoding="utf-8")
    return p


def verification_rows(report: TaskReport) -> list[JsonObject]:
    """One table row per verification result row (a panel's rows also name each judge's verdict)."""
    rows: list[JsonObject] = []
    for vid, v in report.context.metadata.verifications.items():
        if not v.results:
            rows.append({"verifier": vid, "row": None, "result": None, "score": None, "weight": None,
                         "justification": ""})
        for r in v.results:
            row: JsonObject = {
                "verifier": vid,
                "row": r.id,
                "result": r.result,
                "score": r.score,
                "weight": r.weight,
                "justification": (r.justification or "")[:300],
            }
            judges = verdicts_of(r)
            if judges is not None:  # a panel's row: each judge's verdict, in one cell
                row["judges"] = "; ".join(f"{j.judge}: {j.result}" for j in judges)
            rows.append(row)
    return rows


def _without(value: JsonObject, paths: list[tuple[int | str, ...]]) -> JsonObject:
    """A copy of ``value`` without the members at ``paths`` (locations in it)."""
    out = copy.deepcopy(value)
    for path in paths:
        *parents, last = path
        node: JsonValue = out
        for part in parents:
            node = _member(node, part)
        if isinstance(node, dict) and isinstance(last, str):
            node.pop(last, None)
    return out


def _member(node: JsonValue, part: int | str) -> JsonValue:
    """``node[part]`` when there is one, else ``None``."""
    if isinstance(node, dict) and isinstance(part, str):
        return node.get(part)
    if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
        return node[part]
    return None
