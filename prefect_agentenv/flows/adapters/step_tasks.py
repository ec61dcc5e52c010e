"""Each step of a task document as a Prefect task run: retries, graph edges, and running on without Prefect.

:func:`execute_as_prefect_task` is the flow's runner for
:func:`~prefect_agentenv.engine.execute.execute_step`: each attempt's body
(:func:`~prefect_agentenv.engine.execute.run_body`) runs inside a task run. A step's
retries of itself are Prefect task retries (one task run with its attempts in the UI, and
:class:`~prefect_agentenv.engine.execute.RetriesSpent` tells ``execute_step`` they ran); a
step run again by a span retry continues its task run; the edges Prefect draws are the
document's dependencies. When Prefect's API goes away mid-run the steps go on without task runs
and the report says so.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
from collections.abc import Coroutine
from typing import Any

from prefect import Task, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import RunInput, TaskRun, TaskRunResult
from prefect.context import TaskRunContext
from prefect.states import Cancelled, Failed, State
from prefect.task_engine import run_task_async
from prefect.utilities.annotations import quote

from prefect_agentenv.context import RunContext
from prefect_agentenv.documents.graph import StepGraph
from prefect_agentenv.documents.models import TaskDocument
from prefect_agentenv.engine.execute import RetriesSpent, run_body
from prefect_agentenv.exceptions import AgentEnvError, StepError
from prefect_agentenv.flows.adapters.step_log import describe_step
from prefect_agentenv.flows.adapters.task_tags import only_tags, step_task_tags
from prefect_agentenv.redaction import redact
from prefect_agentenv.run_services.concurrency_slots import ApiUnreachable
from prefect_agentenv.runtime.resources.run import RunResources, current_run
from prefect_agentenv.settings import get_settings
from prefect_agentenv.steps.base import StepModel

logger = logging.getLogger("prefect_agentenv.flow")


async def _step_task_body(step: StepModel, inputs: list[RunContext]) -> RunContext | State:
    """Expected failures (our own errors) end the task run as Failed with their message and
    no traceback; anything else is a bug and propagates with its traceback, unless its message
    holds a secret value (then it fails like an expected one, redacted)."""
    current_run().services.started_in_task.add(step.id)
    log = get_run_logger()
    task_run = TaskRunContext.get()
    graph = steps_graph.get()
    if task_run is not None and graph is not None:
        graph.task_runs[step.id] = task_run.task_run
    if task_run is not None and task_run.task_run.run_count > 1:  # a Prefect retry: start clean
        await current_run().teardown.stop_owned_by({step.id})
    try:
        out = await run_body(step, inputs)
    except asyncio.CancelledError:
        # Stopped on purpose (the run was stopped, or another step failed it): the task run ends
        # Cancelled rather than Crashed; the caller re-raises the cancellation.
        return Cancelled(message="stopped before it finished: the run was stopped or another step failed")
    except Exception as exc:
        # A state message is stored by the Prefect API: it never carries a secret in clear.
        message = redact(str(exc), current_run().redact) or type(exc).__name__
        log.error("%s (%s) failed: %s", step.id, step.type, message)
        if isinstance(exc, AgentEnvError) or message != str(exc):
            return Failed(message=message, data=exc)
        raise
    for line in describe_step(inputs, out):
        log.info("%s", line)
    return out


_step_task = task(cache_policy=NO_CACHE, persist_result=False, log_prints=True)(_step_task_body)


@functools.lru_cache(maxsize=256)
def _named_step_task(step_id: str, tags: frozenset[str]) -> Task[[StepModel, list[RunContext]], Coroutine[Any, Any, RunContext | State]]:
    """The step task named for one step: built once per name and tags, not once per task run
    (``with_options`` builds a new ``Task``, reading the function's source again, ~3 ms of CPU)."""
    return _step_task.with_options(name=step_id, task_run_name=step_id, tags=set(tags))


class PrefectSteps:
    """The step graph as Prefect draws it: each step's latest task run, and whose output it used.

    Edges come from the dependencies the document declares, not from which objects reached a
    task, so a step after a tolerated failure (or after a retried span) still shows its upstream.
    """

    def __init__(self, document: TaskDocument, graph: StepGraph | None = None) -> None:
        self.deps = (graph if graph is not None and graph.covers(document.steps) else StepGraph.of(document.steps)).deps
        self.task_runs: dict[str, TaskRun] = {}
        """Each step's task run as its engine left it; a span retry runs the step again in it."""

    def upstream(self, step_id: str) -> dict[str, set[RunInput]]:
        return {"inputs": {TaskRunResult(id=self.task_runs[d].id) for d in self.deps.get(step_id, [])
                           if d in self.task_runs}}


steps_graph: contextvars.ContextVar[PrefectSteps | None] = contextvars.ContextVar(
    "prefect_agentenv_steps_graph", default=None)
"""The running task's step graph as Prefect draws it (None when its steps are not Prefect task runs)."""


async def execute_as_prefect_task(step: StepModel, inputs: list[RunContext]) -> RunContext:
    """Run the step as a Prefect task run (or without one once Prefect's API is gone); a failed
    step raises its error, wrapped in ``RetriesSpent`` when its retries of itself ran as Prefect
    task retries."""
    run = current_run()
    if run.services.without_prefect:
        return await run_body(step, inputs)
    started = run.services.started_in_task
    started.discard(step.id)
    settings = get_settings()
    unreachable, chosen = await _tags_of(step)
    if unreachable:
        return await _without_prefect(run, step, inputs, unreachable)
    runnable = _named_step_task(step.id, frozenset({step.type} if chosen is None else chosen))
    retry = step.retry_config
    own_retries = bool(retry and retry.max_retries > 0 and retry.retry_from_step_id == step.id)
    if own_retries:
        assert retry is not None
        # Retrying only itself is what Prefect's task retries do: the UI shows one task run with its
        # attempts (run_count) and the delay as AwaitingRetry.
        delay = settings.retry_delay_seconds if retry.retry_delay_seconds is None else retry.retry_delay_seconds
        runnable = runnable.with_options(retries=retry.max_retries, retry_delay_seconds=delay)
    graph = steps_graph.get()
    # The step and its inputs go in quoted (Prefect's annotation for it): unquoted, Prefect walks every
    # model in them twice per task run, looking for futures to resolve and inputs to draw, and finds
    # none; the graph's edges are the document's dependencies (``graph.upstream``).
    # A step run again by a span retry continues its own task run: the UI shows one step with
    # several attempts (run_count) instead of unrelated task runs.
    # Handed a task run, Prefect's engine sends no Pending state: a step's would last milliseconds and
    # cost the server a write. A step a concurrency limit may hold back keeps it (the UI shows it waiting).
    parameters = {"step": quote(step), "inputs": quote(inputs)}
    upstream = graph.upstream(step.id) if graph else None
    try:
        with only_tags(chosen):
            task_run = graph.task_runs.get(step.id) if graph else None
            if task_run is None and upstream is not None and chosen == set():
                task_run = await runnable.create_local_run(parameters=parameters, extra_task_inputs=upstream)
            state = await run_task_async(runnable, parameters=parameters, return_type="state", task_run=task_run,
                                         dependencies=upstream)
    except Exception as exc:  # Prefect's own machinery failed (its API went away), not the step
        if step.id in started:
            raise
        return await _without_prefect(run, step, inputs, f"{type(exc).__name__}: {exc}")
    if not isinstance(state, State):  # return_type="state" always gives one
        raise TypeError(f"Prefect returned {type(state).__name__} for step '{step.id}', not a state")
    if not state.is_final() or (state.is_failed() and step.id not in started):
        # The task run never reached the step (e.g. its concurrency slot could not be acquired).
        return await _without_prefect(run, step, inputs, state.message or state.type.value)
    if state.is_cancelled():
        raise asyncio.CancelledError(state.message)
    result = await state.aresult(raise_on_failure=False)
    if not state.is_completed():
        error = result if isinstance(result, BaseException) else StepError(
            state.message or f"step ended in state {state.type.value}", step=step)
        if own_retries and isinstance(error, Exception):
            raise RetriesSpent(error)  # Prefect's task retries ran: execute_step must not retry again
        raise error
    if not isinstance(result, RunContext):
        raise TypeError(f"step '{step.id}' returned {type(result).__name__}, not a RunContext")
    return result


async def _tags_of(step: StepModel) -> tuple[str | None, set[str] | None]:
    """The step's task-run tags (see :func:`step_task_tags`), or why the Prefect API cannot be asked."""
    try:
        return None, await step_task_tags(step.type)
    except ApiUnreachable as exc:
        return f"the Prefect API is unreachable ({exc})", None


async def _without_prefect(run: RunResources, step: StepModel, inputs: list[RunContext], why: str) -> RunContext:
    """Run the step without a Prefect task run: the run finishes its steps even when Prefect's API
    is gone, and the report says so."""
    if not run.services.without_prefect:
        run.services.without_prefect = f"from step '{step.id}' on, steps ran without Prefect task runs ({why})"
        logger.warning("Prefect could not run step %s as a task run (%s); running the rest without Prefect",
                       step.id, why)
    return await run_body(step, inputs)
