"""The run report (a stable JSON contract) and the Prefect artifacts shown in the UI."""

from __future__ import annotations

import asyncio
import copy
import json
import re
from pathlib import Path
from typing import Any, Literal

from prefect.artifacts import acreate_markdown_artifact, acreate_table_artifact
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

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.context import RunContext, StepRecord
from prefect_agentenv.flows.reports.links import file_links_markdown
from prefect_agentenv.flows.engine.scheduler import ScheduleResult
from prefect_agentenv.grading.outcome import Outcome, SkipPolicy, task_outcome
from prefect_agentenv.jsontypes import JsonObject, JsonValue
from prefect_agentenv.redaction import MASK, Redactor
from prefect_agentenv.runtime.stop import DESCRIPTIONS
from prefect_agentenv.runtime.teardown import TeardownRecord
from prefect_agentenv.transcript import Transcript, transcript_markdown

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


def build_report(
    *,
    task_id: str,
    flow_run_id: str | None,
    result: ScheduleResult | None,
    started_at: str,
    duration_s: float,
    teardown: list[TeardownRecord],
    warnings: list[str],
    error: str | None = None,
    timed_out: bool = False,
    secrets: set[str] | None = None,
    skip_policy: SkipPolicy = "zero",
    transcript: Transcript | None = None,
    scoring: ScoringSummary | None = None,
) -> TaskReport:
    """Assemble the report of a run, with every secret value redacted."""
    context = result.context if result else RunContext()
    crashed = [t for t in teardown if t.crashed]
    stop_reason = result.stopped if result else None
    if stop_reason and not error:
        error = f"the run was {DESCRIPTIONS.get(stop_reason, stop_reason)}; every step in flight was stopped"
    failed = (error is not None or timed_out or bool(crashed) or bool(stop_reason)
              or (result is not None and result.fatal is not None))
    if result and result.fatal and not error:
        error = f"step '{result.fatal.id}' failed: {result.fatal.error}"
    if crashed:
        # An env or agent that died under the run explains whatever else failed: say it first.
        died = "; ".join(f"{t.label}: exit code {t.exit_code}" for t in crashed)
        error = f"exited on its own during the run: {died}" + (f" (then {error})" if error else "")
    outcome, score = task_outcome(context.metadata.verifications, failed=failed, timed_out=timed_out,
                                  skip_policy=skip_policy, tolerated_failures=len(context.metadata.failed_steps))
    report = TaskReport(
        task_id=task_id,
        flow_run_id=flow_run_id,
        status="failed" if failed else "completed",
        outcome=outcome,
        score=score,
        started_at=started_at,
        duration_s=round(duration_s, 3),
        context=context,
        steps=list(result.records.values()) if result else [],
        teardown=teardown,
        warnings=warnings + _unsupported_config_warnings(context),
        error=error,
        stop_reason=stop_reason,
        scoring=scoring,
        transcript=transcript,
    )
    report._secrets = frozenset(secrets or ())
    # Read back from what it writes: the report handed on holds no secret either, and is a copy.
    return TaskReport.model_validate(report.model_dump(mode="json"))


def redact(value: Any, secrets: set[str]) -> Any:
    """Replace every occurrence of a secret value in strings, at any depth (see ``redaction``)."""
    return Redactor(secrets).data(value)


def write_report(report: TaskReport, path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(report.model_dump(mode="json"), indent=2) + "\n", encoding="utf-8")
    return p


def artifact_key(*parts: str) -> str:
    """A Prefect artifact key (lowercase letters, digits and dashes)."""
    key = "-".join(re.sub(r"[^a-z0-9]+", "-", p.lower()).strip("-") for p in parts if p)
    return key[:100] or "agentenv"


def summary_markdown(report: TaskReport) -> str:
    """The markdown summary shown on the flow run's Artifacts tab."""
    score = "—" if report.score is None else f"{report.score:.3f}"
    lines = [
        f"# Task `{report.task_id}`: {report.outcome.value}",
        "",
        f"**Score:** {score} · **Status:** {report.status} · **Duration:** {report.duration_s:.1f}s",
    ]
    if report.error:
        lines += ["", f"**Error:** {report.error}"]
    lines += ["", "| step | type | state | started | duration (s) | attempts | error |",
              "|---|---|---|---|---|---|---|"]
    for s in report.steps:
        err = (s.error or "").replace("|", "\\|").replace("\n", " ")[:200]
        started = s.started_at.isoformat(timespec="seconds") if s.started_at else "—"
        lines.append(f"| {s.id} | {s.type} | {s.state} | {started} | {s.duration_s or 0:.2f} | {s.attempts} "
                     f"| {err} |")
    verifications = report.context.metadata.verifications
    if verifications:
        lines += ["", "## Verifications", "", "| verifier | score | rows |", "|---|---|---|"]
        for vid, v in verifications.items():
            vscore = "skipped" if v.skipped else v.score
            lines.append(f"| {vid} | {vscore} | {len(v.results)} |")
    if report.warnings:
        lines += ["", "## Warnings", ""] + [f"- {w}" for w in report.warnings]
    return "\n".join(lines)


def verification_rows(report: TaskReport) -> list[JsonObject]:
    """One table row per verification result row."""
    rows: list[JsonObject] = []
    for vid, v in report.context.metadata.verifications.items():
        if not v.results:
            rows.append({"verifier": vid, "row": None, "result": None, "score": None, "weight": None,
                         "justification": ""})
        for r in v.results:
            rows.append({
                "verifier": vid,
                "row": r.id,
                "result": r.result,
                "score": r.score,
                "weight": r.weight,
                "justification": (r.justification or "")[:300],
            })
    return rows


async def publish_artifacts(report: TaskReport, secrets: set[str] | None = None) -> None:
    """Create the summary, verifications and transcript artifacts on the current flow run.

    They are created at once (each is one API request, and the run waits for them to end). The
    steps are a table of the summary, not an artifact of their own: the server writes each keyed
    artifact, its key's latest version and two events, and a second table would repeat the first.
    """
    key = artifact_key("agentenv", report.task_id)
    markdown = summary_markdown(report)
    collected = report.context.metadata.collected_artifacts
    if collected:
        with await asyncio.to_thread(get_artifact_store) as store:
            markdown += "\n".join(await asyncio.to_thread(file_links_markdown, store, collected))
    pending = [
        acreate_markdown_artifact(markdown=redact(markdown, secrets or set()), key=f"{key}-summary"[:100],
                                  description=f"Outcome of task {report.task_id}"),
    ]
    rows = verification_rows(report)
    if rows:
        pending.append(acreate_table_artifact(table=rows, key=f"{key}-verifications"[:100],
                                              description=f"Verifications of task {report.task_id}"))
    if report.transcript is not None:
        pending.append(acreate_markdown_artifact(markdown=transcript_markdown(report.transcript),
                                                 key=transcript_key(report),
                                                 description=f"Transcript of task {report.task_id}"))
    await asyncio.gather(*pending)


def transcript_key(report: TaskReport) -> str:
    """The transcript artifact's key: stable per task, so the UI keeps each task's history."""
    return f"{artifact_key('agentenv', report.task_id)[:89]}-transcript"


def _unsupported_config_warnings(context: RunContext) -> list[str]:
    """One warning per thing the document asked to give an agent that its card could not take."""
    return [f"step '{r.step_id}': agent '{r.agent_name}' cannot take {r.field} ({r.extension}: {r.reason}); "
            "it was not sent" for r in context.metadata.unsupported_agent_config]


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
