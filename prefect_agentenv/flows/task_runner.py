"""Running one task document: its phases, teardown guaranteed, its report kept.

The ``agent-task`` flow (``flows/agent_task.py``) and a benchmark's task runs recorded as tasks
(``flows/fleet/task_runs.py``) both call :func:`run_task_document`. It lives apart from the flow
because defining the flow builds the JSON schema of its parameters (the task document: a union of
every step type), ~0.3 s of CPU that a process which never calls the flow should not pay.
"""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from prefect.context import FlowRunContext

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.context import RunContext
from prefect_agentenv.documents.graph import StepGraph
from prefect_agentenv.documents.loading import fill_placeholders
from prefect_agentenv.documents.models import TaskDocument
from prefect_agentenv.documents.scoring import ScoringConfig, split_for_isolation, with_scoring_env
from prefect_agentenv.engine.execute import Runner, run_body, unset_env_vars
from prefect_agentenv.engine.reporting import build_report
from prefect_agentenv.engine.run_scope import RunScope, open_run
from prefect_agentenv.engine.scheduler import DagScheduler, ScheduleResult
from prefect_agentenv.engine.scoring_placement import IsolatedScoring, Submission
from prefect_agentenv.engine.submission_record import StoredSubmission, capture_quietly, store_submission
from prefect_agentenv.exceptions import AgentEnvError, ConfigurationError
from prefect_agentenv.flows.adapters import api_health
from prefect_agentenv.flows.adapters.step_tasks import PrefectSteps, execute_as_prefect_task, steps_graph
from prefect_agentenv.flows.ui.task import publish_artifacts
from prefect_agentenv.gateway.ledger import CallRecord
from prefect_agentenv.redaction import MIN_SECRET_LENGTH, Redactor, redacting_logs
from prefect_agentenv.results.task_report import ScoringSummary, TaskReport, write_report
from prefect_agentenv.run_services.lookahead import start_lookahead, stop_lookahead
from prefect_agentenv.runtime.resources.overrides import RunOverrides
from prefect_agentenv.runtime.resources.run import RunResources
from prefect_agentenv.runtime.resources.stop import StopRequest, stop_on_signals
from prefect_agentenv.runtime.resources.teardown import TeardownRecord
from prefect_agentenv.transcript import StepFields, Transcript, build_transcript
from prefect_agentenv.transcript.models import ModelCallLine

logger = logging.getLogger("prefect_agentenv.flow")



async def run_task_document(
    document: TaskDocument,
    *,
    seeds: dict[str, str] | None = None,
    overrides: dict[str, str] | None = None,
    keep: bool = False,
    run_id: str | None = None,
    execute_in_prefect: bool = True,
    publish: bool = True,
    report_path: Path | None = None,
    stop: StopRequest | None = None,
    handle_signals: bool = False,
) -> TaskReport:
    """Run a validated task document and return its report (teardown always runs).

    Args:
        report_path: also write the report here, whatever way the run ends (even cancelled).
        stop: lets a caller (the Prefect cancellation watcher) stop the run in order.
        handle_signals: SIGINT/SIGTERM stop the run in order (the process's top-level run).
    """
    stop = stop or StopRequest()
    state = _prepare(document, seeds=seeds, overrides=overrides, keep=keep, run_id=run_id)
    graph_token = steps_graph.set(PrefectSteps(state.document, state.graph) if execute_in_prefect else None)
    _plan(state, execute_as_prefect_task if execute_in_prefect else run_body, stop)
    # Secrets resolved by any step stay out of every log line; signals stop the run in order.
    with stop_on_signals(stop) if handle_signals else nullcontext(), redacting_logs(state.run.redact):
        try:
            async with state.scope:
                await _execute(state)
        finally:
            steps_graph.reset(graph_token)
            report = await _report(state, state.scope.teardown, in_prefect=execute_in_prefect, publish=publish,
                                   report_path=report_path)
    return report


@dataclass
class _TaskRun:
    """One task document's run as it goes through its phases; the report is built from it."""

    document: TaskDocument
    graph: StepGraph
    """The document's step graph, resolved once: the Prefect graph draws it; the scheduler runs it
    (or, scored in isolation, the rollout's own graph and the verifiers')."""
    isolated: _Isolated | None
    scope: RunScope
    """The run's resources, bound while the steps run and torn down after."""
    error: str | None
    """Why the run did not start or did not finish, for the report."""
    warnings: list[str]
    started_at: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat())
    t0: float = field(default_factory=time.monotonic)
    timed_out: bool = False
    scheduler: DagScheduler | None = None
    scoring: IsolatedScoring | None = None
    result: ScheduleResult | None = None
    submission: Submission | None = None
    """What the agents left, kept for a rescore (``engine/submission_record``)."""
    rollout: RunContext | None = None
    """The context the submission's verifiers start from."""
    stateless: dict[str, str] = field(default_factory=dict)
    """Envs whose state the submission could not keep (no data plane)."""

    @property
    def run(self) -> RunResources:
        return self.scope.run


def _prepare(document: TaskDocument, *, seeds: dict[str, str] | None, overrides: dict[str, str] | None,
             keep: bool, run_id: str | None) -> _TaskRun:
    """Phase 1: the document as it will run (seeds filled, scoring placed) and the run's scope (its
    own folder, owner record, teardown and overrides); a bad override or an unset ``${VAR}`` is kept
    as the reason not to start."""
    if seeds:
        document = TaskDocument.model_validate(fill_placeholders(document.model_dump(mode="json"), seeds))
    graph = StepGraph.of(document.steps)
    document, isolated = _placed(document, graph)
    parsed, override_error = _parse_overrides(overrides)
    flow_run_id = current_flow_run_id()
    scope = open_run(document.id, run_id=run_id or flow_run_id, keep=keep, overrides=parsed,
                     owner=True, flow_run_id=flow_run_id)
    scope.run.services.model_limits = document.limits
    warnings = [f"step '{s.id}': accepted but not acted on: {', '.join(s.ignored_fields)}"
                for s in document.steps if s.ignored_fields]
    return _TaskRun(document, graph, isolated, scope, override_error or unset_env_vars(document.steps), warnings)


def _plan(state: _TaskRun, runner: Runner, stop: StopRequest) -> None:
    """Phase 2: the scheduler of the steps (the rollout when scored in isolation) and the isolated
    scoring, both stopped in order by ``stop``."""
    isolated = state.isolated
    if isolated is None:
        state.scheduler = DagScheduler(state.document.steps, runner, graph=state.graph)
    else:
        state.scheduler = DagScheduler(isolated.rollout.steps, runner, graph=isolated.rollout_graph)
    stop.on_stop(state.scheduler.stop)
    if isolated:
        state.scoring = IsolatedScoring(isolated.verifiers.steps, isolated.scoring, runner)
        stop.on_stop(state.scoring.stop)


async def _execute(state: _TaskRun) -> None:
    """Phase 3: run the steps, then the isolated scoring; a cancellation or timeout is noted for
    the report and goes on up."""
    assert state.scheduler is not None
    lookahead = start_lookahead(state.run, state.document.steps) if state.error is None else None
    try:
        if state.error is None:
            state.result = rollout = await state.scheduler.run()
            if state.scoring and state.result.fatal is None and not state.result.stopped:
                state.result = await state.scoring.run(state.run, state.result)
            await _keep_submission_of(state, rollout)
    except asyncio.CancelledError:
        state.error = "the run was cancelled"
        raise
    except TimeoutError:
        state.timed_out, state.error = True, "the run timed out"
        raise
    finally:
        await asyncio.shield(stop_lookahead(state.run, lookahead))


async def _report(state: _TaskRun, teardown: list[TeardownRecord], *, in_prefect: bool, publish: bool,
                  report_path: Path | None) -> TaskReport:
    """Phase 4, after teardown: redact the run's files, build the report and keep it (locally
    first), then say whether the Prefect API was lost."""
    run, document = state.run, state.document
    await asyncio.to_thread(Redactor(run.redact).files, run.workdir)
    api_lost = await _api_lost(run, in_prefect)
    assert state.scheduler is not None
    result = state.result or state.scheduler.result()
    transcript = await _transcript(document, run.run_id, result, state.error)
    if transcript is not None and run.services.model_calls:
        transcript.model_calls = [model_call_line(call) for call in run.services.model_calls]
    report = build_report(
        task_id=document.id,
        flow_run_id=current_flow_run_id(),
        result=result,
        started_at=state.started_at,
        duration_s=time.monotonic() - state.t0,
        teardown=teardown,
        warnings=state.warnings + _run_warnings(run),
        error=state.error,
        timed_out=state.timed_out,
        secrets=run.redact,
        skip_policy=document.skip_policy,
        transcript=transcript,
        scoring=_scoring_summary(document, state.scoring),
        model_calls=run.services.model_calls,
        run_id=run.run_id,
    )
    await _keep_report(report, run, report_path, publish=publish)
    await _store_submission(state, transcript)
    if api_lost:
        api_health.mark_lost(api_lost)  # the report is on disk: the CLI may leave now
    return report


async def _api_lost(run: RunResources, in_prefect: bool) -> str | None:
    """Why the Prefect API is gone, asked once after a process's own run (not a benchmark's
    subflows): the report then says so and nothing more is sent to it."""
    if not (in_prefect and current_flow_run_id() and is_top_level_run()):
        return None
    lost = await asyncio.shield(api_health.probe())
    if lost:
        already = run.services.without_prefect or "the steps ran, but Prefect may not have recorded all of them"
        run.services.without_prefect = f"the Prefect API was lost during the run ({lost}); {already}"
    return lost


async def _keep_submission_of(state: _TaskRun, rollout: ScheduleResult) -> None:
    """Capture the submission while the envs still run: the isolated scoring's own capture when it
    made one, else (shared scoring) one now that every step has finished."""
    if rollout.stopped:
        return
    state.rollout = rollout.context
    state.submission = state.scoring.submission if state.scoring else None
    if state.submission is None:
        state.submission, warning = await capture_quietly(state.run, rollout.context, state.stateless)
        if warning:
            state.warnings.append(warning)


async def _store_submission(state: _TaskRun, transcript: Transcript | None) -> None:
    """Keep the submission beside the report (one object), with the replies and the transcript."""
    if state.submission is None or state.rollout is None:
        return
    run, scoring = state.run, state.document.scoring
    record = StoredSubmission.of(state.submission, task_id=state.document.id, run_id=run.run_id,
                                 context=state.rollout, transcript=transcript, secrets=run.redact,
                                 mode=scoring.mode if scoring else "shared", stateless=state.stateless)
    try:
        with await asyncio.to_thread(get_artifact_store) as store:
            await asyncio.to_thread(store_submission, store, record)
    except AgentEnvError as exc:  # the report is kept; only a later rescore of this run is lost
        logger.warning("could not store the submission in the artifact store: %s", exc)


@dataclass
class _Isolated:
    """A task scored in isolation: its rollout steps, then its verifiers in fresh envs."""

    rollout: TaskDocument
    rollout_graph: StepGraph
    verifiers: TaskDocument
    scoring: ScoringConfig


def _placed(document: TaskDocument, graph: StepGraph) -> tuple[TaskDocument, _Isolated | None]:
    """The document with its ``scoring`` env and network on its verifiers, and, when it is scored
    in isolation, its rollout and verifier halves (``graph``: the document's)."""
    scoring = document.scoring
    if scoring is None:
        return document, None
    document = document.model_copy(update={"steps": with_scoring_env(document.steps, scoring)})
    if scoring.mode != "isolated":
        return document, None
    rollout, verifiers = split_for_isolation(document.steps, graph)
    return document, _Isolated(document.model_copy(update={"steps": rollout}), StepGraph.of(rollout),
                               document.model_copy(update={"steps": verifiers}), scoring)


def _scoring_summary(document: TaskDocument, scoring: IsolatedScoring | None) -> ScoringSummary | None:
    if document.scoring is None:
        return None
    network = document.scoring.network
    return ScoringSummary(mode=document.scoring.mode, attempts=scoring.attempts if scoring else None,
                          network=network.mode if network else None, env=sorted(document.scoring.env))


def _run_warnings(run: RunResources) -> list[str]:
    """What the report must say about how the run was recorded and redacted."""
    out = [run.services.without_prefect] if run.services.without_prefect else []
    if any(0 < len(secret) < MIN_SECRET_LENGTH for secret in run.redact):
        out.append(f"a secret value shorter than {MIN_SECRET_LENGTH} characters was not masked "
                   "(masking it would garble every text that contains it)")
    return out


def _parse_overrides(overrides: dict[str, str] | None) -> tuple[RunOverrides, str | None]:
    """The run's overrides, or why the run must not start (a key this runner does not know)."""
    try:
        return RunOverrides.parse(overrides), None
    except ConfigurationError as exc:
        return RunOverrides(), f"{exc}: nothing was deployed"


async def _keep_report(report: TaskReport, run: RunResources, report_path: Path | None, *, publish: bool) -> None:
    """Write the report locally first (it must survive whatever fails next), then the copies."""
    write_report(report, run.workdir / "report.json")
    if report_path is not None:
        try:
            write_report(report, report_path)
        except OSError as exc:
            logger.error("could not write the report to %s: %s", report_path, exc)
    await _upload_report(report, run.run_id)
    if publish and current_flow_run_id() and not run.services.without_prefect:
        try:
            await publish_artifacts(report, run.redact)
        except Exception as exc:  # artifacts are a view; a failed upload must not hide the report
            logger.warning("could not publish Prefect artifacts: %s", exc)


async def _transcript(document: TaskDocument, run_id: str, result: ScheduleResult | None,
                      error: str | None) -> Transcript | None:
    """The run's transcript, read back from its stored records (redacted with the report)."""
    context = result.context if result else RunContext()
    steps = list(result.records.values()) if result else []
    fields = {s.id: StepFields.model_validate(s.model_dump(include=set(StepFields.model_fields)))
              for s in document.steps}

    def build() -> Transcript:
        with get_artifact_store() as store:
            return build_transcript(task_id=document.id, run_id=run_id, context=context, steps=steps,
                                    step_fields=fields, error=error, store=store)

    try:
        return await asyncio.shield(asyncio.to_thread(build))
    except Exception as exc:  # a view of the run: its failure must not cost the report
        logger.warning("could not build the transcript: %s", exc)
        return None


def model_call_line(call: CallRecord) -> ModelCallLine:
    """A gateway's record of a call as the transcript shows it."""
    return ModelCallLine(role=call.role, wire=call.wire, model=call.model, status=call.status,
                         input_tokens=call.input_tokens, output_tokens=call.output_tokens, cost_usd=call.cost_usd,
                         latency_seconds=round(call.latency_seconds, 3), failure=call.failure, limit=call.limit)


async def _upload_report(report: TaskReport, run_id: str) -> None:
    """Keep the report in the artifact store too (``runs/<run id>/report.json``), so a benchmark
    that dispatched this run to another machine can read it."""
    try:
        with await asyncio.to_thread(get_artifact_store) as store:
            await asyncio.to_thread(store.put_object, report_key(run_id), report.model_dump_json(indent=2))
    except AgentEnvError as exc:  # the local report is already written; the copy is a convenience
        logger.warning("could not store the report in the artifact store: %s", exc)


def report_key(run_id: str) -> str:
    """Where a run's report is kept among the store's run records."""
    return f"{run_id}/report.json"


def is_top_level_run() -> bool:
    """Whether this flow run is its process's own (a CLI run, a worker's run), not a subflow."""
    ctx = FlowRunContext.get()
    return ctx is None or ctx.flow_run is None or ctx.flow_run.parent_task_run_id is None


def current_flow_run_id() -> str | None:
    ctx = FlowRunContext.get()
    return str(ctx.flow_run.id) if ctx and ctx.flow_run else None
