"""A benchmark task run's result, made from its report or from the crash that left none.

The results store (:mod:`~prefect_agentenv.results.store.run_store`) keeps these, one line each.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from prefect_agentenv.context import CollectedFiles
from prefect_agentenv.grading.outcome import Outcome, SkipPolicy
from prefect_agentenv.results import (
    FailureCause,
    RunKey,
    SetupFingerprint,
    TaskResult,
    TaskSnapshot,
    axes_unknown_errors,
    axis_scores,
)
from prefect_agentenv.results.task_report import TaskReport
from prefect_agentenv.usage import TokenUsage, total_usage


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


def result_from_report(report: TaskReport, key: RunKey, *, seed: Mapping[str, str] | None = None,
                       tags: Sequence[str] = (), report_url: str | None = None,
                       snapshot: TaskSnapshot | None = None, finished_at: str | None = None,
                       skip_policy: SkipPolicy = "zero", task_run_id: str | None = None,
                       failure: FailureCause | None = None, setup: SetupFingerprint | None = None) -> TaskResult:
    """The benchmark result of a task run, from its report (``failure``: its classified cause).

    Axis scores come from the verification rows (:func:`axis_scores`, skipped verifiers counting
    as the task's ``skip_policy`` says) and the collected files
    from ``metadata.collected_artifacts``, so the summary can link them without the report.
    ``setup`` is the result's fingerprint (``results.fingerprint.setup_from_report``).
    """
    metadata = report.context.metadata
    return TaskResult(
        task_id=key.task_id, seed_index=key.seed_index, seed=dict(seed or {}), epoch=key.epoch, tags=list(tags),
        status=report.status, outcome=report.outcome, score=report.score, duration_s=report.duration_s,
        error=report.error, report_url=report_url, flow_run_id=report.flow_run_id, task_run_id=task_run_id,
        snapshot=snapshot,
        axis_scores=axis_scores(metadata.verifications, skip_policy),
        axes_unknown_errors=axes_unknown_errors(metadata.verifications),
        files=collected_files(metadata.collected_artifacts),
        usage=_usage(report),
        started_at=report.started_at, finished_at=finished_at or now_iso(), failure=failure, setup=setup,
        cell=key.cell,
    )


def _usage(report: TaskReport) -> TokenUsage | None:
    """The task run's model usage: every call its gateway counted (agents, judges, user simulators),
    else what its agents reported."""
    if report.model_calls is not None:
        return report.model_calls.usage()
    return total_usage(response.usage for response in report.context.prompt_responses.values())


def crashed_result(key: RunKey, error: str, *, seed: Mapping[str, str] | None = None, tags: Sequence[str] = (),
                   flow_run_id: str | None = None, task_run_id: str | None = None,
                   snapshot: TaskSnapshot | None = None,
                   started_at: str | None = None, duration_s: float = 0.0,
                   failure: FailureCause | None = None, setup: SetupFingerprint | None = None) -> TaskResult:
    """The result of a task run that ended without a report (its flow run crashed or was cancelled).

    It counts as FAILED with score 0 in the denominator (unless the infrastructure policy excludes
    it), and a resume runs it again.
    """
    return TaskResult(task_id=key.task_id, seed_index=key.seed_index, seed=dict(seed or {}), epoch=key.epoch,
                      tags=list(tags), status="crashed", outcome=Outcome.FAILED, score=0.0, duration_s=duration_s,
                      error=error, flow_run_id=flow_run_id, task_run_id=task_run_id, snapshot=snapshot,
                      started_at=started_at, finished_at=now_iso(), failure=failure, setup=setup, cell=key.cell)


def collected_files(collected: Mapping[str, CollectedFiles]) -> dict[str, str]:
    """File name → URL over every collect step; a name two steps collected is prefixed with the step id."""
    by_step = {step: record.artifacts for step, record in collected.items()}
    names = [name for urls in by_step.values() for name in urls]
    return {(f"{step}/{name}" if names.count(name) > 1 else name): str(url)
            for step, urls in by_step.items() for name, url in urls.items()}
