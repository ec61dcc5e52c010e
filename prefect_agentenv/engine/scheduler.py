"""The DAG scheduler: starts each step as soon as its dependencies finish.

It knows nothing of Prefect: each step runs through
:func:`~prefect_agentenv.engine.execute.execute_step` with the caller's runner (the flow's
runs each attempt in a Prefect task). ``execute_step`` owns what a step's end means (retries,
tolerated failures, errored verifiers); the scheduler owns the graph: which outputs a step
receives, re-running a span of steps for a retry that starts at an ancestor, and the first
fatal failure cancelling everything still in flight.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from prefect_agentenv.context import RunContext, StepRecord
from prefect_agentenv.documents.graph import StepGraph, retry_span
from prefect_agentenv.engine.execute import Runner, attempt, execute_step, partial_context
from prefect_agentenv.steps.base import StepModel


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


class _Fatal(Exception):
    def __init__(self, record: StepRecord) -> None:
        super().__init__(record.error)
        self.record = record


class DagScheduler:
    """Runs a set of steps wired by ``depends_on`` with the documented failure semantics.

    Args:
        steps: the steps, in document order (a task document's, or the verifiers of a scoring).
        runner: how each attempt of a step is carried out (see ``execute``).
        initial: the input of the steps that depend on nothing (the restored context a scoring
            attempt grades); none: they start from an empty context.
        graph: the steps' graph when the caller resolved it already (resolved here otherwise).
    """

    def __init__(self, steps: Sequence[StepModel], runner: Runner, *, initial: RunContext | None = None,
                 graph: StepGraph | None = None) -> None:
        self.steps = {s.id: s for s in steps}
        self.deps = (graph if graph is not None and graph.covers(steps) else StepGraph.of(steps)).deps
        self.runner = runner
        self.initial = initial
        self.records = {s.id: StepRecord(id=s.id, type=s.type) for s in steps}
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
        record = self.records[step_id]
        try:
            out = await execute_step(self.steps[step_id], self._inputs_of(step_id), runner=self.runner,
                                     record=record, spans=self)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            partial = partial_context(exc)
            if partial is not None:
                # The report keeps what the step left (e.g. the failed prompt's PromptResponse).
                self.outputs[step_id] = partial
                self.order.append(step_id)
            raise _Fatal(record) from exc
        self._finish(step_id, out)

    def _inputs_of(self, step_id: str) -> list[RunContext]:
        """The latest outputs of a step's dependencies (``initial`` for a step with none).

        After a retry, branches that finished earlier still carry the replaced outputs of the
        retried span; those inputs are pre-merged with the newest value winning.
        """
        deps = self.deps[step_id]
        if not deps:
            return [self.initial] if self.initial is not None else []
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

    def span(self, start: str, failing: str) -> list[str]:
        """The steps re-run when ``failing`` retries from ``start``: start, failing, and every step between."""
        return retry_span(self.deps, start, failing)

    async def rerun(self, span: list[str]) -> RunContext:
        """Run the span again, each step on the fresh outputs of the span before it; once the
        last one succeeds the fresh outputs replace the old (a failure raises and keeps them)."""
        fresh: dict[str, RunContext] = {}
        for sid in span:
            deps = self.deps[sid]
            inputs = [fresh[d] if d in fresh else self.outputs[d] for d in deps] if deps else self._inputs_of(sid)
            fresh[sid] = await attempt(self.steps[sid], inputs, self.runner, self.records[sid])
        self._retried = True
        for sid in span[:-1]:
            self.outputs[sid] = fresh[sid]
            self.order.remove(sid)
            self.order.append(sid)
        return fresh[span[-1]]

    def finalize_records(self) -> None:
        """Mark steps that never started as not_run."""
        for record in self.records.values():
            if record.state in ("pending",):
                record.state = "not_run"
