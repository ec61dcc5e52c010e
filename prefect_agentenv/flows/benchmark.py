"""The ``benchmark`` flow: every (task × seed × epoch) of a benchmark as an ``agent_task`` run.

Tasks run in this process, each as an ``agent_task`` subflow (default) or, with the document's
``task_runs_as: tasks``, as a task run of this flow run; or, for a fleet, as flow runs of the
``agent-task`` deployment on a work pool (``dispatch="deployment"``). Each run's task document
is frozen (stored with its sha256) before it starts; results are appended to the run's JSONL as
they finish, so a rerun with the same ``run_id`` only runs what is missing or errored. The
summary compares the run pair by pair with its baseline (the previous run of the slug unless one
is named); every result carries its setup (``results.fingerprint``), and a gate
(``fail_under``, ``fail_on_regression``) fails the flow run when the run falls short.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Annotated, Literal

from prefect import get_run_logger
from prefect.states import Completed, Failed, State
from pydantic import Field

from prefect_agentenv.artifacts import ArtifactBackend, ArtifactNotFoundError, get_artifact_store
from prefect_agentenv.documents.benchmarks.document import Benchmark, RunBudget
from prefect_agentenv.documents.benchmarks.matrix import Matrix, SweepCell, merge_matrix, sweep_cells
from prefect_agentenv.documents.compile import ExpandedTask
from prefect_agentenv.documents.models import TaskDocument
from prefect_agentenv.engine.benchmark_source import BenchmarkSource, load_source, with_source
from prefect_agentenv.exceptions import ArtifactError, ConfigurationError, TaskDocumentError
from prefect_agentenv.flows.adapters.events import finished_events, regressed_event, task_result_event
from prefect_agentenv.flows.adapters.failures import (
    classify_report,
    dispatch_failure,
    infrastructure_verdict,
    no_report_failure,
    retry_delay,
    should_retry,
    timeout_failure,
)
from prefect_agentenv.flows.adapters.json_flow import json_parameter_flow
from prefect_agentenv.flows.adapters.subflow_start import subflow_starter
from prefect_agentenv.flows.control.steering import Steering
from prefect_agentenv.flows.fleet.budget import RunSpend, not_run_result
from prefect_agentenv.flows.fleet.cassettes import keep_model_calls, model_traffic_of
from prefect_agentenv.flows.fleet.dispatch import SHARD_DEPLOYMENT, Dispatcher, current_flow_run_id
from prefect_agentenv.flows.judge_preflight import JudgeGateRefusedError, gate_before_run
from prefect_agentenv.flows.task_runner import report_key
from prefect_agentenv.flows.ui.benchmark import (
    ProgressBar,
    benchmark_flow_run_name,
    headline_text,
    progress_artifact,
    publish_benchmark_artifacts,
    publish_html_report,
)
from prefect_agentenv.grading.outcome import Outcome
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.results import (
    DEFAULT_CONFIDENCE,
    BenchmarkSummary,
    Comparison,
    GateResult,
    RetriedAttempt,
    RunKey,
    SweepSummary,
    TaskResult,
    cell_suffix,
    check_gate,
    summarize,
    summary_markdown,
    sweep_markdown,
)
from prefect_agentenv.results.comparison.sweep_baseline import sweep_regressions, sweep_summary
from prefect_agentenv.results.judges.calibration import report_trust
from prefect_agentenv.results.judges.judge_trust import judge_gate_section
from prefect_agentenv.results.run_outcome import decide, outcome_of, verdict_markdown
from prefect_agentenv.results.store.baseline import Gate, baseline_results, compare_with_baseline, find_baseline
from prefect_agentenv.results.store.benchmark_result import BenchmarkRunResult
from prefect_agentenv.results.store.fingerprint import benchmark_setup, setup_from_report
from prefect_agentenv.results.store.run_lookup import FoundRun
from prefect_agentenv.results.store.run_store import (
    ResultsStore,
    RunEntry,
    crashed_result,
    result_from_report,
    task_key,
)
from prefect_agentenv.results.task_report import TaskReport, verification_rows
from prefect_agentenv.run_services.model_door import ModelTraffic, model_budget, model_traffic
from prefect_agentenv.runtime.resources.overrides import RunOverrides
from prefect_agentenv.runtime.resources.pool import WarmPool, bind_pool, unbind_pool
from prefect_agentenv.runtime.resources.run import bind_lookups, unbind_lookups
from prefect_agentenv.settings import get_settings

logger = logging.getLogger("prefect_agentenv.benchmark")

Listener = Callable[[str, JsonObject], None]
progress_listener: contextvars.ContextVar[Listener | None] = contextvars.ContextVar("benchmark_progress", default=None)
"""Set by the CLI to draw live progress; called with ("start"|"result"|"summary", payload), the
payload as JSON (a model's JSON dump), which the listener validates into its own models."""


def _emit(event: str, payload: JsonObject) -> None:
    listener = progress_listener.get()
    if listener is not None:
        listener(event, payload)


@json_parameter_flow(name="benchmark", flow_run_name=benchmark_flow_run_name, persist_result=False, log_prints=True)
async def benchmark(
    path: str | None = None,
    benchmark: Benchmark | str | None = None,
    run_id: str | None = None,
    overrides: dict[str, str] | None = None,
    matrix: dict[str, list[str]] | None = None,
    epochs: Annotated[int | None, Field(ge=1)] = None,
    concurrency: Annotated[int | None, Field(ge=1)] = None,
    dispatch: Literal["subflow", "deployment"] = "subflow",
    deployment: str = "agent-task/agent-task",
    tasks_per_flow_run: Annotated[int | None, Field(ge=1)] = None,
    shard_deployment: str = SHARD_DEPLOYMENT,
    report_dir: str | None = None,
    baseline: str | None = None,
    confidence: Annotated[float, Field(gt=0, lt=1)] = DEFAULT_CONFIDENCE,
    fail_under: Annotated[float | None, Field(ge=0, le=1)] = None,
    fail_on_regression: bool = False,
    budget: RunBudget | None = None,
    record_model_calls: bool = False,
    replay: str | None = None,
    require_calibrated_judge: Annotated[float | None, Field(ge=-1, le=1)] = None,
) -> State:
    """Run a benchmark: tasks × seeds × epochs with bounded concurrency, then summarize, compare and gate.

    Args:
        path: The benchmark file (YAML or JSON) on the worker's disk, or a published version (`SLUG@VERSION`).
        benchmark: The benchmark document itself, a published version or a path (`path` wins over it).
        run_id: Resume this run: only its missing or errored task runs run again. Empty: the flow run's id.
        overrides: Overrides for every task, e.g. `{"a2a_agent_id": "llm", "model": "gpt-4.1"}`.
        matrix: A sweep: override keys and the values to try (`{"model": ["a", "b"]}`), over the document's.
        epochs: How many times each task runs (overrides the document's `epochs`).
        concurrency: How many task runs at once (overrides the document's `concurrency`).
        dispatch: `subflow` runs every task here; `deployment` starts each on the work pool of `deployment`.
        deployment: The agent-task deployment that `dispatch=deployment` starts, as `flow/deployment`.
        tasks_per_flow_run: With `dispatch=deployment`, task runs per flow run on the pool (overrides the document's).
        shard_deployment: The agent-task-shard deployment that runs them when that is above 1.
        report_dir: Also write each task's report and the summary into this folder on the worker.
        baseline: Compare with this run, not the previous finished one: `<run id>`, `<slug>/<run id>`, `<slug>`.
        confidence: The confidence of the paired comparison's intervals and verdicts (0.95: 95%).
        fail_under: Fail the flow run when the mean score is under this (0 to 1); in a sweep, any cell's.
        fail_on_regression: Fail the flow run when McNemar's test (or the paired bootstrap) marks all task runs worse.
        budget: What the run's model calls may cost (`usd`, `tokens`; the document's `budget` otherwise).
        record_model_calls: Keep the run's model calls in the artifact store, for `replay`.
        replay: Answer every model call from this recorded run of the benchmark, asking no provider.
        require_calibrated_judge: Fail the flow run when a rubric score's judge setup is not calibrated to this kappa.
    """
    try:
        source = await asyncio.to_thread(load_source, benchmark, path)
        bench = source.header
        runner = _Runner(source, run_id=run_id or current_flow_run_id(), overrides=overrides or {},
                         epochs=epochs or bench.epochs, concurrency=concurrency or bench.concurrency, dispatch=dispatch,
                         deployment=deployment, tasks_per_flow_run=tasks_per_flow_run or bench.tasks_per_flow_run,
                         shard_deployment=shard_deployment, report_dir=Path(report_dir) if report_dir else None,
                         gate=Gate(baseline, confidence, fail_under, fail_on_regression, require_calibrated_judge),
                         matrix=merge_matrix(bench.matrix, matrix), budget=budget or bench.budget)
        await runner.prepare(baseline, record=record_model_calls, replay=replay)  # refused before anything runs
    except (TaskDocumentError, ConfigurationError, ArtifactError, JudgeGateRefusedError) as exc:
        return _refused(exc)
    return _final_state(await runner.run())


def _refused(exc: Exception) -> State:
    """A user mistake (a bad document, setting or store): logged in one line, no traceback; the judge
    gate's refusal is not logged: the state, named as a failed judge gate, carries its line."""
    if isinstance(exc, JudgeGateRefusedError):
        return Failed(name="Judge gate failed", message=str(exc))
    get_run_logger().error("%s", exc)
    return Failed(message=str(exc))


def _final_state(result: BenchmarkRunResult) -> State:
    """The flow run's final state, from the run's one outcome (``results.run_outcome``): Completed only
    when the command line exits 0, else Failed under a name that says why; the data is the run's result.
    The outcome's line is not logged here: the command line prints it once, and the state's message
    carries it to the UI."""
    get_run_logger().info("benchmark %s run %s: %s", result.slug, result.run_id, result.headline)
    data = result.model_dump(mode="json")  # the flow run's result stays plain JSON for the API and the UI
    outcome = outcome_of(result)
    if outcome.failed:
        return Failed(name=outcome.state_name, message=outcome.line, data=data)
    if result.regressions:
        return Completed(message=f"{result.headline} — {len(result.regressions)} regression(s)", data=data)
    return Completed(message=result.headline, data=data)


_Compared = tuple[SweepSummary | None, Comparison | None, RunEntry | None, GateResult | None, list[str], list[str]]
"""A finished run's sweep, comparison, baseline entry, gate, regressions and regressed cells."""


class _Runner:
    """One benchmark run: schedules task runs, records results, publishes the summary."""

    def __init__(self, source: BenchmarkSource, *, run_id: str | None, overrides: dict[str, str], epochs: int,
                 concurrency: int, dispatch: str, deployment: str, report_dir: Path | None,
                 tasks_per_flow_run: int = 1, shard_deployment: str = SHARD_DEPLOYMENT, gate: Gate | None = None,
                 matrix: Matrix | None = None, budget: RunBudget | None = None) -> None:
        self.source, self.bench, self.tasks = source, source.header, {t.task_id: t for t in source.tasks}
        self.run_id = run_id or time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
        self.overrides = {**self.bench.defaults.overrides, **overrides}
        self.policy = self.bench.infrastructure
        self.epochs, self.concurrency, self.dispatch, self.deployment = epochs, concurrency, dispatch, deployment
        self.report_dir = report_dir
        self.gate = gate or Gate()
        # The benchmark's part of every result's fingerprint, and the named baseline (else the previous run).
        self.matrix = matrix or {}
        self.cells: list[SweepCell] = sweep_cells(self.matrix, self.overrides)
        self.cell_overrides: dict[str | None, dict[str, str]] = {
            c.label: {**self.overrides, **c.overrides} for c in self.cells} if self.cells else {None: self.overrides}
        """Each cell's overrides on top of the run's (one entry, ``None``, outside a sweep)."""
        self.setups = {cell: benchmark_setup(benchmark=self.bench.slug, benchmark_version=self.bench.version,
                                             overrides=own) for cell, own in self.cell_overrides.items()}
        self.baseline: FoundRun | None = None
        self.store: ArtifactBackend = get_artifact_store()
        self.results = ResultsStore(self.store, self.bench.slug, self.run_id)
        self.done = 0
        self.progress = ProgressBar(None, 0)
        self.dispatcher = Dispatcher(source, dispatch=dispatch, deployment=deployment, store=self.store,
                                     tasks_per_flow_run=tasks_per_flow_run if dispatch == "deployment" else 1,
                                     shard_deployment=shard_deployment, run_id=self.run_id)
        self.traffic: ModelTraffic | None = None
        """The run's model calls recorded, or replayed from another run (``None``: neither)."""
        self.budget = RunSpend(budget) if budget is not None else None
        """What the run may spend on model calls and has spent (``None``: no budget)."""
        self.steering: Steering  # the run's live queue and controls, made when it runs
        self.verification_rows: list[JsonObject] = []
        """Rows of the verifications table artifact (Prefect's API takes them as JSON)."""

    async def prepare(self, baseline: str | None, *, record: bool, replay: str | None) -> None:
        """What is checked and read before anything runs: the overrides, the source against a resumed
        run's, the baseline, the recorded model calls to replay, and the judge setups known before the run."""
        RunOverrides.parse(self.overrides)  # every cell's keys are checked again when it runs
        await asyncio.to_thread(self.results.check_source, self.source.ref, [c.label for c in self.cells])
        self.baseline = await asyncio.to_thread(find_baseline, self.results, baseline)
        self.traffic = await asyncio.to_thread(model_traffic_of, self.results, record, replay)
        self.judge_line = None if self.gate.require_calibrated_judge is None else await gate_before_run(
            self.store, self.bench.slug, self.tasks.values(), self.cell_overrides.values(),
            self.gate.require_calibrated_judge, quiet=progress_listener.get() is not None)

    def keys(self) -> list[RunKey]:
        return [RunKey(t.task_id, t.seed_index, e, cell) for cell in self.cell_overrides
                for t in self.tasks.values() for e in range(self.epochs)]

    async def run(self) -> BenchmarkRunResult:
        keys = self.keys()
        pending = await asyncio.to_thread(self.results.pending, keys)
        await asyncio.to_thread(self.results.record_started, published=self.source.ref,
                                cells=[c.label for c in self.cells])
        _emit("start", {"run_id": self.run_id, "slug": self.bench.slug, "total": len(keys), "pending": len(pending),
                        "published": str(self.source.ref) if self.source.ref else None,
                        "cells": [c.label for c in self.cells], "axes": list(self.matrix)})
        self.progress = ProgressBar(await progress_artifact(self.bench.slug, len(keys) - len(pending), len(keys)),
                                    len(keys))
        self.done = len(keys) - len(pending)
        self.steering = Steering.of(self, total=len(keys), done=self.done, emit=_emit)
        self.dispatcher.expect(len(pending))
        bound = model_budget.set(self.steering.counter)  # counting even without a budget: one may be set live
        traffic = model_traffic.set(self.steering.traffic(self.traffic))
        try:
            async with self._shared(), self.steering:
                await self.steering.run_all(pending, self._run_key)
        finally:
            model_budget.reset(bound)
            model_traffic.reset(traffic)
        if self.traffic is not None and self.traffic.recording is not None:
            await asyncio.to_thread(keep_model_calls, self.results, self.traffic.recording)
        return await self._finish()

    async def _run_key(self, key: RunKey) -> None:
        """Attempt one run key until it passes, fails for the agent, or has no retry left; record it.

        Retried here, not with Prefect's flow or task retries: the decision needs the report's
        classification, which a flow's retries cannot consult (they have no retry condition and
        retry the same flow run, in the same run folder); a failure may come before Prefect has a
        run to retry (a 503 creating it); a fleet's flow runs belong to their deployment. Each
        attempt is a new subflow run, task run or flow run, so its envs and agents are fresh.
        The back-off is Prefect's (``exponential_backoff``, with its jitter); a waiting retry
        holds no concurrency slot. The slot is the live gate's (flows/control: paused, concurrency changed).
        """
        retried: list[RetriedAttempt] = []
        while True:
            async with self.steering.gate.slot():
                if (budget := self.steering.spend) is not None and (spent := budget.spent_by()) is not None:
                    await self._record(not_run_result(key, self.tasks[key.task_id], budget.describe(spent)))
                    return
                result, report = await self.steering.attempt(key, lambda: self._attempt(key))
                if not should_retry(result.failure, len(retried), self.policy):
                    # The bookkeeping ends before the gate lets the next task run start: its progress
                    # PATCH racing the next subflow's POST /task_runs/ made a SQLite server answer 503,
                    # and the client waited ~2 s before retrying (benchmarks/task_overhead.py; the benchmarks
                    # README's section on a benchmark of 8 task runs).
                    await self._record(self._final(key, result, report, retried))
                    return
            assert result.failure is not None
            retried.append(RetriedAttempt(failure=result.failure, flow_run_id=result.flow_run_id,
                                          task_run_id=result.task_run_id, report_url=result.report_url,
                                          started_at=result.started_at, duration_s=result.duration_s))
            delay = retry_delay(self.policy, len(retried))
            self.dispatcher.expect(1)
            logger.warning("task %s failed for infrastructure (%s: %s); attempt %s of %s in %.1fs", key.label(),
                           result.failure.reason, result.failure.message, len(retried) + 1, self.policy.retries + 1,
                           delay)
            await asyncio.sleep(delay)

    async def _record(self, result: TaskResult) -> None:
        """Append a run key's result, announce it, move the progress bar."""
        result = self.steering.noted(result.model_copy(update={"published": self.source.ref}))
        if self.steering.spend is not None:
            self.steering.spend.add(result.usage)
        await self.results.append_async(result)
        task_result_event(self.bench.slug, self.run_id, result)
        self.done += 1
        _emit("result", result.model_dump(mode="json"))
        await self.progress.move_to(self.done)

    @contextlib.asynccontextmanager
    async def _shared(self) -> AsyncIterator[None]:
        """What the task runs in this process share: the client that starts their runs, one lookup of
        each block (always) and, with ``pool: true``, one warm pool."""
        async with self._subflow_starter():
            if self.dispatch != "subflow":
                yield
                return
            lookups = bind_lookups({})
            try:
                async with self._warm_pool():
                    yield
            finally:
                unbind_lookups(lookups)

    @contextlib.asynccontextmanager
    async def _subflow_starter(self) -> AsyncIterator[None]:
        """Subflows and a fleet's flow runs start through a client that asks a locked SQLite
        database again at once (flows/subflow_start); task runs recorded as tasks need none."""
        if self.dispatch == "subflow" and self.bench.task_runs_as == "tasks":
            yield
            return
        async with subflow_starter() as starter:
            self.dispatcher.starter = starter
            try:
                yield
            finally:
                await self.dispatcher.aclose()
                self.dispatcher.starter = None

    @contextlib.asynccontextmanager
    async def _warm_pool(self) -> AsyncIterator[None]:
        if not self.bench.pool:
            yield
            return
        pool = WarmPool(workdir=get_settings().runs_dir / f"pool-{self.run_id}")
        token = bind_pool(pool)
        try:
            yield
        finally:
            unbind_pool(token)
            logger.info("warm pool: %s instance(s) served the benchmark's task runs", pool.size)
            await asyncio.shield(pool.close())

    async def _attempt(self, key: RunKey) -> tuple[TaskResult, TaskReport | None]:
        """One attempt of a run key, as a new run; its result carries its classified failure."""
        task = await asyncio.to_thread(self._frozen, self.tasks[key.task_id], task_key(key.task_id, key.seed_index))
        snapshot = await asyncio.to_thread(self.results.snapshot_task, task_key(key.task_id, key.seed_index),
                                           self.source.document_json(task))
        started, t0 = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), time.monotonic()
        setup = self.setups[key.cell]
        try:
            async with self.steering.flight.deadline(key, task.timeout_seconds):
                report, ran = await self.dispatcher.run(task, key, self.steering.overrides(self.cell_overrides[key.cell]))
        except TimeoutError:
            error = f"the task did not finish within {self.steering.flight.limit_of(task.timeout_seconds):g}s"
            return TaskResult(task_id=key.task_id, seed_index=key.seed_index, seed=dict(task.seed_row or {}),
                              epoch=key.epoch, tags=task.tags, status="failed", outcome=Outcome.TIMED_OUT, score=0.0,
                              duration_s=round(time.monotonic() - t0, 3), snapshot=snapshot, started_at=started,
                              error=error, failure=timeout_failure(error), setup=setup,
                              cell=key.cell), None
        except Exception as exc:  # one failed API call (after Prefect's own retries) costs this attempt only
            logger.warning("task %s (epoch %s) could not run: %s", key.task_id, key.epoch, exc)
            return crashed_result(key, f"the task could not run: {type(exc).__name__}: {exc}", started_at=started,
                                  duration_s=round(time.monotonic() - t0, 3), failure=dispatch_failure(exc),
                                  seed=task.seed_row, tags=task.tags, snapshot=snapshot, setup=setup), None
        if report is None:
            error = f"the task's {ran.kind} ended without a report"
            return crashed_result(key, error, flow_run_id=ran.flow_run_id, task_run_id=ran.task_run_id,
                                  started_at=started, duration_s=round(time.monotonic() - t0, 3),
                                  failure=no_report_failure(error), seed=task.seed_row, tags=task.tags,
                                  snapshot=snapshot, setup=setup), None
        url = self.store.object_url(report_key(ran.task_run_id or report.flow_run_id or ran.flow_run_id or ""))
        judges = await asyncio.to_thread(report_trust, self.store, self.bench.slug, key.task_id, report,
                                         required_kappa=self.gate.require_calibrated_judge)
        return result_from_report(report, key, report_url=url, skip_policy=task.document.skip_policy,
                                  task_run_id=ran.task_run_id, failure=classify_report(report, task.document),
                                  seed=task.seed_row, tags=task.tags, snapshot=snapshot,
                                  setup=setup_from_report(report, setup)).model_copy(update={"judges": judges}), report

    def _final(self, key: RunKey, result: TaskResult, report: TaskReport | None,
               retried: list[RetriedAttempt]) -> TaskResult:
        """The run key's result: its last attempt, the attempts before it, whether the policy
        excludes it; its report kept in the verifications table and the report folder."""
        if report is not None:
            self.verification_rows += [{"task": key.task_id, "epoch": key.epoch, **({"cell": key.cell} if key.cell else {}),
                                        **row}
                                       for row in verification_rows(report)]
            if self.report_dir:
                self.report_dir.mkdir(parents=True, exist_ok=True)
                name = f"{task_key(key.task_id, key.seed_index)}-epoch{key.epoch}{cell_suffix(key.cell)}.json"
                (self.report_dir / name).write_text(report.model_dump_json(indent=2))
        failure = result.failure
        if failure is not None and failure.infrastructure and self.policy.exclude_from_mean:
            failure = failure.model_copy(update={"excluded": True})
        return result.model_copy(update={"failure": failure, "attempts": len(retried) + 1, "retried": retried})

    def _frozen(self, task: ExpandedTask, key: str) -> ExpandedTask:
        """A resumed run runs the task as it was frozen when the run first started it, so reruns are
        reproducible even if the document changed since."""
        try:
            frozen = self.results.read_snapshot(key)
        except ArtifactNotFoundError:
            return task
        document = TaskDocument.model_validate(frozen)
        if document != task.document:
            logger.warning("task %s changed since run %s started; running the frozen copy", key, self.run_id)
        return task.model_copy(update={"document": document})

    def _compared(self, results: list[TaskResult], summary: BenchmarkSummary) -> _Compared:
        """The run compared with its baseline and gated: as a whole, or (a sweep) cell by cell."""
        if self.cells:
            found = baseline_results(self.results, self.baseline)
            labelled = [(c.label, c.overrides) for c in self.cells]
            sweep, gate = sweep_summary(self.results, results, labelled, self.matrix, found, self.gate)
            lines, cells = sweep_regressions(sweep)
            return sweep, None, found[2] if found else None, gate, lines, cells
        comparison, entry = compare_with_baseline(self.results, results, self.baseline, confidence=self.gate.confidence)
        gate = check_gate(summary, comparison, fail_under=self.gate.fail_under,
                          fail_on_regression=self.gate.fail_on_regression)
        return None, comparison, entry, gate, comparison.regressions if comparison else [], []

    async def _finish(self) -> BenchmarkRunResult:
        results = await asyncio.to_thread(self.results.read_results)
        summary = summarize(results)
        sweep, comparison, previous, gate, regressions, regressed_cells = await asyncio.to_thread(
            self._compared, results, summary)
        await asyncio.to_thread(self.results.record_finished, summary, regressions=regressions,
                                regressed_cells=regressed_cells)
        verdict = infrastructure_verdict(summary.failures, summary.counts.total, self.policy)
        title = f"{self.bench.name} — run {self.run_id}"
        markdown = summary_markdown(summary, comparison, results, title=title,
                                    alert=verdict and f"The benchmark failed: {verdict}",
                                    section=sweep_markdown(sweep) if sweep else None)
        markdown = with_source(markdown, self.source.ref, previous) + self.steering.summary_section()
        judges_short, section = judge_gate_section(results, self.gate.require_calibrated_judge, self.judge_line)
        markdown += section
        markdown += verdict_markdown(decide(infrastructure_error=None, not_run=summary.counts.not_run,
                                            judge_gate=judges_short, gate=gate, total=summary.counts.total,
                                            run_id=self.run_id))
        html_url = await publish_html_report(self.store, self.bench.slug, self.run_id, title=title,
                                             headline=headline_text(summary), sweep=sweep,
                                             folder=self.report_dir / "html" if self.report_dir else None)
        if html_url:
            opens = self.store.browser_url(html_url) or html_url  # presigned when the store is S3
            markdown += f"\n\n**HTML report** (charts, trend, a transcript per task run): [{html_url}]({opens})\n"
        try:
            await publish_benchmark_artifacts(self.store, self.bench.slug, markdown, results, self.verification_rows,
                                              self.store.browser_url(html_url) or html_url if html_url else None)
        except Exception as exc:  # artifacts are a view of results already stored; never lose the summary
            logger.warning("could not publish the benchmark's Prefect artifacts: %s", exc)
        finished_events(self.bench.slug, self.run_id, summary, comparison)
        for cell in sweep.cells if sweep else []:
            regressed_event(self.bench.slug, self.run_id, cell.summary, cell.comparison, cell.cell)
        result = BenchmarkRunResult(
            run_id=self.run_id, slug=self.bench.slug, published=self.source.ref, headline=headline_text(summary),
            summary=summary,
            counts={**summary.counts.model_dump(mode="json"), "total": summary.counts.total},
            regressions=regressions, sweep=sweep,
            regressed_tasks=[row.name for row in comparison.of_verdict("worse")] if comparison else [],
            comparison=comparison, gate=gate, results_url=self.results.results_url, report_url=html_url,
            markdown=markdown, infrastructure_error=verdict, judge_gate=judges_short)
        out = result.model_dump(mode="json")
        if self.report_dir:
            (self.report_dir / "summary.md").write_text(markdown)
            (self.report_dir / "summary.json").write_text(json.dumps(out, indent=2, default=str))
        _emit("summary", out)
        self.store.close()
        return result
