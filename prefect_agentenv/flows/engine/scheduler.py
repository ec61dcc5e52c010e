"""The DAG scheduler: starts each step as soon as its dependencies finish.

It knows nothing of Prefect: ``execute(step, inputs)`` runs one step (the flow wraps it in a
Prefect task). The scheduler owns the failure semantics: tolerated failures, retries of a
span of steps, and the first fatal failure cancelling everything still in flight.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from prefect_agentenv.context import FailedStep, RunContext, StepRecord
from prefect_agentenv.documents.graph import resolve_dependencies, retry_span
from prefect_agentenv.documents.models import TaskDocument
from prefect_agentenv.exceptions import StepError
from prefect_agentenv.grading.verification import errored
from prefect_agentenv.steps.base import StepModel, VerifierStep

Execute = Callable[[StepModel, list[RunContext]], Awaitable[RunContext]]
BeforeRetry = Callable[[list[str]], Awaitable[Any]]


@dataclass
class ScheduleResult:
    """The outcome of running a whole DAG."""

    context: RunContext
    records: dict[str, StepRecord]
    fatal: StepRecord | None = None
    order: list[str] = field(default_factory=list)
    """Step ids in the order they finished."""
    stopped: str | None = None
    """Why the run was stopped from outside (``SIGINT``, ``SIGTERM``, ``cancelled``), if it was."""


_RETRIES_EXHAUSTED = "retries_exhausted"


def mark_retries_exhausted(error: BaseException, exhausted: bool) -> None:
    """Say that the step's own retries already ran (as Prefect task retries), so the scheduler
    does not retry it again. An attribute on the error: it may be any exception a step raised."""
    setattr(error, _RETRIES_EXHAUSTED, exhausted)


def retries_exhausted(error: BaseException) -> bool:
    """Whether :func:`mark_retries_exhausted` said the step's retries already ran."""
    return bool(getattr(error, _RETRIES_EXHAUSTED, False))


def _partial_context(error: Exception) -> RunContext | None:
    """What a failed step produced before it failed (a failed prompt still leaves its PromptResponse)."""
    return error.context if isinstance(error, StepError) else None


class _Fatal(Exception):
    def __init__(self, record: StepRecord) -> None:
        super().__init__(record.error)
        self.record = record


class DagScheduler:
    """Runs the steps of one task document with the documented failure semantics."""

    def __init__(self, document: TaskDocument, execute: Execute, before_retry: BeforeRetry | None = None) -> None:
        self.steps = {s.id: s for s in document.steps}
        self.deps = resolve_dependencies(list(self.steps), [s.dependency_ids() for s in document.steps])
        self.execute = execute
        self.before_retry = before_retry
        self.records = {s.id: StepRecord(id=s.id, type=s.type) for s in document.steps}
        self.outputs: dict[str, RunContext] = {}
        self.order: list[str] = []
        self._done: dict[str, asyncio.Future[RunContext]] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._retried = False
        self.stopped: str | None = None

    def stop(self, reason: str) -> None:
        """Stop the run from outside: cancel every step in flight; steps not started never start."""
        if self.stopped is None:
            self.stopped = reason
        for t in self._tasks.values():
            if not t.done():
                t.cancel()

    def result(self, fatal: StepRecord | None = None) -> ScheduleResult:
        """What ran so far, e.g. after the run itself was cancelled."""
        self.finalize_records()
        final = RunContext.merge([self.outputs[s] for s in self.order], later_wins=True)
        return ScheduleResult(final, self.records, fatal, list(self.order), self.stopped)

    async def run(self) -> ScheduleResult:
        """Run every step; return when all finished or the first fatal failure stopped the run."""
        loop = asyncio.get_running_loop()
        self._done = {sid: loop.create_future() for sid in self.steps}
        tasks = {sid: asyncio.create_task(self._run_one(sid), name=f"step:{sid}") for sid in self.steps}
        self._tasks = tasks
        if self.stopped:
            self.stop(self.stopped)
        fatal: StepRecord | None = None
        try:
            for finished in asyncio.as_completed(list(tasks.values())):
                try:
                    await finished
                except _Fatal as exc:
                    fatal = exc.record
                    break
                except asyncio.CancelledError:
                    # A step cancelled by stop() ends the run; our own cancellation propagates.
                    current = asyncio.current_task()
                    if self.stopped is None or (current is not None and current.cancelling()):
                        raise
                    break
        finally:
            # On a fatal failure (or our own cancellation) stop everything still in flight.
            pending = [t for t in tasks.values() if not t.done()]
            for t in pending:
                t.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            for fut in self._done.values():
                if not fut.done():
                    fut.cancel()
            self.finalize_records()
        return self.result(fatal)

    async def _run_one(self, step_id: str) -> None:
        for d in self.deps[step_id]:
            await self._done[d]
        inputs = self._inputs_of(step_id)
        step = self.steps[step_id]
        out = await self._attempt(step, inputs)
        self._finish(step_id, out)

    def _inputs_of(self, step_id: str) -> list[RunContext]:
        """The latest outputs of a step's dependencies.

        After a retry, branches that finished earlier still carry the replaced outputs of the
        retried span; those inputs are pre-merged with the newest value winning.
        """
        deps = self.deps[step_id]
        inputs = [self.outputs[d] for d in deps]
        if self._retried and len(inputs) > 1:
            by_finish = sorted(deps, key=self.order.index)
            return [RunContext.merge([self.outputs[d] for d in by_finish], later_wins=True)]
        return inputs

    def _finish(self, step_id: str, out: RunContext) -> None:
        self.outputs[step_id] = out
        if step_id not in self.order:
            self.order.append(step_id)
        fut = self._done[step_id]
        if not fut.done():
            fut.set_result(out)

    async def _attempt(self, step: StepModel, inputs: list[RunContext]) -> RunContext:
        record = self.records[step.id]
        try:
            return await self._execute_recorded(step, inputs)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            error: Exception = exc
        if step.retry_config and step.retry_config.max_retries > 0 and not retries_exhausted(error):
            out = await self._retry(step, error)
            if out is not None:
                return out
        partial = _partial_context(error)
        if not step.fail_task_on_error:
            record.state = "tolerated"
            return self._tolerated_context(step, [partial] if partial is not None else inputs, record)
        if partial is not None:
            # The report keeps what the step left (e.g. the failed prompt's PromptResponse).
            self.outputs[step.id] = partial
            self.order.append(step.id)
        raise _Fatal(record) from error

    async def _execute_recorded(self, step: StepModel, inputs: list[RunContext]) -> RunContext:
        record = self.records[step.id]
        record.attempts += 1
        record.state = "running"
        record.started_at = datetime.now(timezone.utc)
        record.error = record.error_type = None
        started = time.monotonic()
        try:
            out = await self.execute(step, inputs)
        except asyncio.CancelledError:
            record.state = "cancelled"
            record.error = "cancelled because another step failed or the run was stopped"
            record.error_type = "Cancelled"
            raise
        except Exception as exc:
            record.state = "failed"
            record.error = str(exc) or type(exc).__name__
            record.error_type = type(exc).__name__
            raise
        finally:
            record.duration_s = round(time.monotonic() - started, 4)
        record.state = "completed"
        return out

    async def _retry(self, failing: StepModel, error: Exception) -> RunContext | None:
        """Re-run the span from retry_from_step_id through the failing step, up to max_retries times."""
        assert failing.retry_config is not None
        span = retry_span(self.deps, failing.retry_config.retry_from_step_id, failing.id)
        for _ in range(failing.retry_config.max_retries):
            if self.before_retry:
                await self.before_retry(span)
            fresh: dict[str, RunContext] = {}
            try:
                for sid in span:
                    ins = [fresh[d] if d in fresh else self.outputs[d] for d in self.deps[sid]]
                    fresh[sid] = await self._execute_recorded(self.steps[sid], ins)
            except asyncio.CancelledError:
                raise
            except Exception:
                continue
            self._retried = True
            for sid in span[:-1]:
                self.outputs[sid] = fresh[sid]
                self.order.remove(sid)
                self.order.append(sid)
            return fresh[failing.id]
        return None

    def _tolerated_context(self, step: StepModel, inputs: list[RunContext], record: StepRecord) -> RunContext:
        ctx = RunContext.merge(inputs)
        ctx.metadata.failed_steps.append(
            FailedStep(
                step_id=step.id,
                step_type=step.type,
                error=record.error or "",
                error_type=record.error_type or "Exception",
                started_at=record.started_at or datetime.now(timezone.utc),
                duration_s=record.duration_s or 0.0,
            )
        )
        if isinstance(step, VerifierStep):
            # An errored verifier still counts, as 0: leaving it out would let a tolerated
            # failure raise the task score (docs/scoring.md, "Errors").
            axes = step.declared_axes()  # it scores 0 on them (per-axis scores); None: rows from a script
            verification = errored(record.error or record.error_type or "failed", weight=step.weight,
                                   axes=axes, step_type=step.type)
            ctx.metadata.verifications.setdefault(step.verifier_id, verification)
        return ctx

    def finalize_records(self) -> None:
        """Mark steps that never started as not_run."""
        for record in self.records.values():
            if record.state in ("pending",):
                record.state = "not_run"
