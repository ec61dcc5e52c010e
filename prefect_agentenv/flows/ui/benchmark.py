"""A benchmark run's Prefect artifacts (progress bar, summary, tables, report link), its HTML
report and its headline. Each is a view of results already stored: a failure is logged, never fatal."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from uuid import UUID

from prefect.artifacts import (
    acreate_link_artifact,
    acreate_markdown_artifact,
    acreate_progress_artifact,
    acreate_table_artifact,
    aupdate_progress_artifact,
)
from prefect.context import FlowRunContext

from prefect_agentenv.artifacts import ArtifactBackend
from prefect_agentenv.engine.benchmark_source import slug_of
from prefect_agentenv.exceptions import AgentEnvError
from prefect_agentenv.flows.ui.links import run_url
from prefect_agentenv.flows.ui.task import artifact_key
from prefect_agentenv.flows.ui.view_data import publish_benchmark_report
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.results import BenchmarkSummary, SweepSummary, TaskResult

logger = logging.getLogger("prefect_agentenv.benchmark")


def headline_text(summary: BenchmarkSummary) -> str:
    """One line: mean score, pass rate, how many passed, errored and went unscored, and how many
    failed for infrastructure (when any did)."""
    h = summary.headline
    mean = "-" if h.mean_score is None else f"{h.mean_score:.3f}"
    rate = "-" if h.pass_rate is None else f"{h.pass_rate:.0%}"
    infrastructure = ""
    if h.infrastructure_failed:
        excluded = summary.counts.excluded
        infrastructure = f"; {h.infrastructure_failed} failed for infrastructure" + (
            f", {excluded} excluded" if excluded else "")
    not_run = f"; {summary.counts.not_run} not run: budget spent" if summary.counts.not_run else ""
    loose = sorted({a.name for a in (summary.setup.agents if summary.setup else []) if a.confinement == "unconfined"})
    unconfined = f"; UNCONFINED agents: {', '.join(loose)}" if loose else ""
    return (f"mean score {mean}, pass rate {rate} ({h.passed}/{h.denominator} passed; "
            f"{h.errored} errored, {h.unscored} unscored{infrastructure}{not_run}{unconfined})")


async def progress_artifact(slug: str, done: int, total: int) -> UUID | None:
    """The run's progress bar, when it runs in a flow run (a failure is logged, never fatal)."""
    if FlowRunContext.get() is None:
        return None
    try:
        return await acreate_progress_artifact(progress=100.0 * done / max(1, total), key=artifact_key(
            "bench", slug, "progress"), description=f"Benchmark {slug}: share of task runs done")
    except Exception as exc:  # the progress bar is a view; the benchmark goes on without it
        logger.warning("could not create the progress artifact: %s", exc)
        return None


PROGRESS_INTERVAL_S = 3.0
"""The progress bar moves at most this often while task runs end (and always for the last one)."""


class ProgressBar:
    """The benchmark's progress artifact, moved as task runs end.

    Each move is a PATCH the server writes and an event it records; moved after every task run,
    that was one more write per task run for a bar the UI only redraws. It moves at most every
    ``interval_s``, and always when the last task run ends, so it still reaches 100 %.
    """

    def __init__(self, artifact_id: UUID | None, total: int, interval_s: float = PROGRESS_INTERVAL_S) -> None:
        self.artifact_id, self.total, self.interval_s = artifact_id, max(1, total), interval_s
        self._moved_at = time.monotonic()

    def grow(self, more: int) -> None:
        """``more`` task runs were put back in the queue (``control requeue``): the total grows."""
        self.total += more

    async def move_to(self, done: int) -> None:
        """Show ``done`` task runs of the total, unless the bar moved less than ``interval_s`` ago
        and this is not the last one (a failure is logged, never fatal)."""
        now = time.monotonic()
        if self.artifact_id is None or (done < self.total and now - self._moved_at < self.interval_s):
            return
        self._moved_at = now
        try:
            await aupdate_progress_artifact(self.artifact_id, progress=100.0 * done / self.total)
        except Exception as exc:  # the progress bar is a view; a failed update must not stop the rest
            logger.warning("could not update the progress artifact: %s", exc)


async def publish_benchmark_artifacts(store: ArtifactBackend, slug: str, markdown: str, results: list[TaskResult],
                                      rows: list[JsonObject], html_url: str | None = None) -> None:
    """The summary, the table of task runs, the verification rows and the report link."""
    if FlowRunContext.get() is None:
        return
    key = artifact_key("bench", slug)
    links = [f"- [{r.task_id} · epoch {r.epoch}{f' · {r.cell}' if r.cell else ''}]({url}): {r.outcome.value}"
             for r in results
             if (url := run_url(r.flow_run_id, r.task_run_id))]
    if links:
        markdown += "\n\n## Task runs\n\n" + "\n".join(links)
    await acreate_markdown_artifact(markdown=markdown, key=f"{key}-summary"[:100], description=f"Benchmark {slug}")
    await acreate_table_artifact(table=[_task_row(store, r) for r in results], key=f"{key}-tasks"[:100],
                                 description=f"Task runs of benchmark {slug}")
    if rows:
        await acreate_table_artifact(table=rows, key=f"{key}-verifications"[:100],
                                     description=f"Every verification row of benchmark {slug}")
    if html_url:
        await acreate_link_artifact(link=html_url, link_text="HTML report: charts, trend, transcripts",
                                    key=f"{key}-report"[:100], description=f"Benchmark {slug}: the HTML report")


def _task_row(store: ArtifactBackend, r: TaskResult) -> JsonObject:
    """A row of the task runs table, with whose failure it was and how many attempts it took."""
    return {"task": r.task_id, **({"cell": r.cell} if r.cell else {}), "seed": r.seed_index, "epoch": r.epoch, "outcome": r.outcome.value,
            "score": r.score, "failure": r.failure.label() if r.failure else None, "attempts": r.attempts,
            "duration_s": r.duration_s, "flow_run": run_url(r.flow_run_id, r.task_run_id),
            "report": store.browser_url(r.report_url or "") or run_url(r.flow_run_id, r.task_run_id) or r.report_url,
            "error": (r.error or "")[:200]}


async def publish_html_report(store: ArtifactBackend, slug: str, run_id: str, *, title: str, headline: str,
                              sweep: SweepSummary | None = None, folder: Path | None = None) -> str | None:
    """The run's HTML report, rendered a file at a time into the run's folder of the store (and
    into ``folder`` on this machine when given); its URL, or None when it could not be made."""
    try:
        return await asyncio.to_thread(publish_benchmark_report, store, slug, run_id, title=title,
                                       headline=headline, sweep=sweep, folder=folder)
    except (AgentEnvError, OSError, ValueError) as exc:
        logger.warning("could not render or publish the HTML report of run %s: %s", run_id, exc)
        return None


def benchmark_flow_run_name() -> str:
    """The benchmark flow run's name in the UI: its slug, the agent it was run with, the sweep's axes."""
    params = FlowRunContext.get().flow_run.parameters if FlowRunContext.get() else {}  # type: ignore[union-attr]
    slug = slug_of(params.get("path")) or slug_of(params.get("benchmark"))
    name = slug or Path(str(params.get("path") or "benchmark")).stem
    agent = (params.get("overrides") or {}).get("a2a_agent_id")
    swept = ",".join(params.get("matrix") or {})
    return f"{name}" + (f" · {agent}" if agent else "") + (f" · sweep of {swept}" if swept else "")
