"""A task run's artifacts in the Prefect UI: its summary, verifications and transcript."""

from __future__ import annotations

import asyncio
import re

from prefect.artifacts import acreate_markdown_artifact, acreate_table_artifact

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.flows.ui.links import file_links_markdown
from prefect_agentenv.redaction import redact
from prefect_agentenv.results.task_report import TaskReport, verification_rows
from prefect_agentenv.transcript import transcript_markdown


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
    lines += _model_call_lines(report)
    if report.warnings:
        lines += ["", "## Warnings", ""] + [f"- {w}" for w in report.warnings]
    return "\n".join(lines)


def _model_call_lines(report: TaskReport) -> list[str]:
    """The run's model calls per role, as its gateway counted them."""
    if report.model_calls is None:
        return []
    lines = ["", "## Model calls (counted by the gateway)", "",
             "| role | calls | failed | input tokens | output tokens | cost (USD) |", "|---|---|---|---|---|---|"]
    for role, totals in [*report.model_calls.by_role.items(), ("all", report.model_calls.totals)]:
        cost = "—" if totals.cost_usd is None else f"{totals.cost_usd:.4f}"
        lines.append(f"| {role} | {totals.calls} | {totals.failed} | {totals.input_tokens:,} | "
                     f"{totals.output_tokens:,} | {cost} |")
    if report.model_calls.totals.unmetered:
        lines.append(f"\n{report.model_calls.totals.unmetered} call(s) were not metered: the provider did not "
                     "report their tokens.")
    return lines


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
