"""Prefect events of a benchmark run, so automations can act on results and regressions.

* ``prefect-agentenv.benchmark.task-result`` — every task run's result (outcome, score, epoch, its
  failure's cause and attempts);
* ``prefect-agentenv.benchmark.finished`` — the run's headline (mean score, pass rate, counts, failures);
* ``prefect-agentenv.benchmark.regressed`` — the paired comparison with the run's baseline (the
  previous run of its slug unless one was named) marks a row worse: ``score``, ``previous_score``,
  ``slug``, the run ids, every regression, the regressed tasks, and whether the setups differ.

The resource is the benchmark, ``prefect-agentenv.benchmark.<slug>``; the flow run is related, so the
UI's event feed links back to it. docs/benchmarks.md has an automation example.
"""

from __future__ import annotations

from prefect.context import FlowRunContext
from prefect.events import emit_event

from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.results import BenchmarkSummary, Comparison, TaskResult

PREFIX = "prefect-agentenv.benchmark"


def _resource(slug: str) -> dict[str, str]:
    return {"prefect.resource.id": f"{PREFIX}.{slug}", "prefect.resource.name": slug,
            "prefect.resource.role": "benchmark"}


def _related() -> list[dict[str, str]]:
    ctx = FlowRunContext.get()
    if ctx is None or ctx.flow_run is None:
        return []
    return [{"prefect.resource.id": f"prefect.flow-run.{ctx.flow_run.id}",
             "prefect.resource.role": "flow-run", "prefect.resource.name": ctx.flow_run.name}]


def task_result_event(slug: str, run_id: str, result: TaskResult) -> None:
    """One task run of the benchmark finished."""
    emit_event(event=f"{PREFIX}.task-result", resource=_resource(slug), related=_related(), payload={
        "slug": slug, "run_id": run_id, "task_id": result.task_id, "seed_index": result.seed_index,
        "epoch": result.epoch, "outcome": result.outcome.value, "score": result.score,
        "flow_run_id": result.flow_run_id, "task_run_id": result.task_run_id,
        "failure": result.failure.model_dump(mode="json") if result.failure else None, "attempts": result.attempts})


def finished_events(slug: str, run_id: str, summary: BenchmarkSummary, comparison: Comparison | None) -> None:
    """The run's result, and a regression event when the comparison flagged any."""
    emit_event(event=f"{PREFIX}.finished", resource=_resource(slug), related=_related(),
               payload=_payload(slug, run_id, summary))
    regressed_event(slug, run_id, summary, comparison)


def _payload(slug: str, run_id: str, summary: BenchmarkSummary) -> JsonObject:
    headline = summary.headline
    return {"slug": slug, "run_id": run_id, "score": headline.mean_score, "pass_rate": headline.pass_rate,
            "counts": summary.counts.model_dump(mode="json"), "failures": summary.failures.model_dump(mode="json")}


def regressed_event(slug: str, run_id: str, summary: BenchmarkSummary, comparison: Comparison | None,
                    cell: str | None = None) -> None:
    """A regression event when the comparison flagged any; a sweep sends one per regressed cell
    (``cell`` in the payload, the scores the cell's)."""
    if comparison is None or not comparison.has_regressions:
        return
    payload = {**_payload(slug, run_id, summary), **({"cell": cell} if cell else {})}
    overall = comparison.overall.score if comparison.overall else None
    emit_event(event=f"{PREFIX}.regressed", resource=_resource(slug), related=_related(), payload={
        **payload, "previous_score": overall.previous_mean if overall else None,
        "previous_run_id": comparison.previous_run_id, "regressions": comparison.regressions,
        "regressed": comparison.regressed, "setup": comparison.setup.sentence(),
        "regressed_tasks": [{"task_id": row.name, "seed_index": row.seed_index,
                             "score": row.score.current_mean if row.score else None,
                             "previous_score": row.score.previous_mean if row.score else None}
                            for row in comparison.of_verdict("worse")]})
