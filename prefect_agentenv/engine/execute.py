"""One step, run the same way whatever runs it: placeholders, retries, and what its end records.

Every path that runs a step calls :func:`execute_step`: the DAG scheduler of a flow run (each
step, and each verifier of isolated scoring), the reusable step tasks, ``AgentSession`` and the
Python API's scoring. So everywhere:

* ``${VAR}`` / ``${VAR:-default}`` in the step's fields are filled from the environment as the
  step starts (:func:`run_body`), their values join the run's redaction set, and a variable
  that is not set fails the step with one text (:func:`unset_variables`).
* A failed step is retried as its ``retry_config`` says: after ``retry_delay_seconds`` (else
  the ``retry_delay_seconds`` setting), what the span started is stopped and the span runs
  again — the step alone, or, in a DAG, every step from ``retry_from_step_id`` through it.
* A step that still fails under ``fail_task_on_error: false`` is *tolerated*: a row in
  ``metadata.failed_steps`` and, for a verifier, an errored verification
  (:func:`~prefect_agentenv.grading.verification.errored`: 0 on its declared axes, one
  ``verifier_error`` row). Under ``true`` its error is raised to the caller (the scheduler then
  fails the run).

How one attempt is carried out is the caller's :data:`Runner`: :func:`run_body` itself, or
``run_body`` inside a Prefect task run (``step_tasks``), which runs a step's retries of itself as
Prefect task retries and says so by raising :class:`RetriesSpent`.

This module sits in the engine, at the flows layer, because it runs steps: ``runtime`` is below
the steps and cannot import them; ``tasks`` and ``session`` share the flows layer and ``api`` is
above it, so every caller imports it without an import pointing up. Nothing here needs a flow
run or the Prefect API.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Protocol, TypeVar

from pydantic import ValidationError

from prefect_agentenv.context import FailedStep, RunContext, StepRecord
from prefect_agentenv.documents.loading import env_var_names, resolve_env_vars
from prefect_agentenv.documents.validation import resolved_value_errors
from prefect_agentenv.exceptions import ConfigurationError, StepError
from prefect_agentenv.grading.verification import errored
from prefect_agentenv.runtime.resources.run import current_run
from prefect_agentenv.settings import get_settings
from prefect_agentenv.steps.base import StepModel, VerifierStep
from prefect_agentenv.steps.registry import get_step

Runner = Callable[[StepModel, list[RunContext]], Awaitable[RunContext]]
"""Carries out one attempt of a step on its inputs: :func:`run_body`, or it inside a Prefect task run."""

_Step = TypeVar("_Step", bound=StepModel)


class RetriesSpent(Exception):
    """Raised by a :data:`Runner` that already ran the step's retries of itself (Prefect's task
    retries): the step failed with :attr:`error` and is not to be retried again."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class Spans(Protocol):
    """A DAG that can run a span of its steps again (the scheduler)."""

    def span(self, start: str, failing: str) -> list[str]:
        """The steps re-run when ``failing`` retries from ``start``, in order."""
        ...

    async def rerun(self, span: list[str]) -> RunContext:
        """Run the span again on the latest outputs; the last step's context (raises on a failure)."""
        ...


async def execute_step(step: StepModel, inputs: list[RunContext], *, runner: Runner | None = None,
                       record: StepRecord | None = None, spans: Spans | None = None) -> RunContext:
    """Run one step with its retries, and record how it ended on ``record``.

    Args:
        inputs: the contexts of its dependencies (merged before it runs).
        runner: how an attempt is carried out; :func:`run_body` when omitted.
        record: where its attempts, state, timing and error go (the report's step row).
        spans: the DAG it runs in, for a ``retry_config`` that starts at an earlier step.

    Returns:
        Its context; for a failure it tolerates (``fail_task_on_error: false``), the inputs'
        context (or what it left) with the failure recorded.

    Raises:
        Exception: the step's last error, when it fails the task.
        ConfigurationError: its ``retry_config`` starts at another step and it runs on its own.
    """
    runner = runner or run_body
    record = record if record is not None else StepRecord(id=step.id, type=step.type)
    span = _retry_span(step, spans)
    try:
        return await attempt(step, inputs, runner, record)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        error: Exception = exc
    if span and not isinstance(error, RetriesSpent):
        out, error = await _retry(step, inputs, span, runner, record, spans, error)
        if out is not None:
            return out
    return _failed(step, inputs, _cause(error), record)


async def attempt(step: StepModel, inputs: list[RunContext], runner: Runner, record: StepRecord) -> RunContext:
    """One attempt of a step, kept on its ``record``: attempts, state, start, duration, error."""
    record.attempts += 1
    record.state = "running"
    record.started_at = datetime.now(timezone.utc)
    record.error = record.error_type = None
    started = time.monotonic()
    try:
        out = await runner(step, inputs)
    except asyncio.CancelledError:
        record.state = "cancelled"
        record.error = "cancelled because another step failed or the run was stopped"
        record.error_type = "Cancelled"
        raise
    except Exception as exc:
        cause = _cause(exc)
        record.state = "failed"
        record.error = str(cause) or type(cause).__name__
        record.error_type = type(cause).__name__
        raise
    finally:
        record.duration_s = round(time.monotonic() - started, 4)
    record.state = "completed"
    return out


async def run_body(step: StepModel, inputs: list[RunContext]) -> RunContext:
    """The body of every attempt, wherever it runs: merge the inputs, fill the ``${VAR}``s, run the step."""
    definition = get_step(step.type)
    ctx = RunContext.merge(inputs)
    return await definition.run(resolve_placeholders(step, current_run().redact), ctx)


def resolve_placeholders(step: _Step, redact: set[str]) -> _Step:
    """The step with its ``${VAR}`` / ``${VAR:-default}`` filled in (the values go into ``redact``).

    Raises:
        ConfigurationError: a variable without a default is not set (:func:`unset_variables`).
        StepError: a field refuses the value it resolved to (checked as written at validation).
    """
    try:
        return type(step).model_validate(resolve_env_vars(step.model_dump(by_alias=True), used=redact))
    except KeyError as exc:
        raise ConfigurationError(unset_variables({exc.args[0]: [step.id]})) from None
    except ValidationError as exc:
        raise StepError(f"with its ${{VAR}}s resolved: {resolved_value_errors(exc)}", step=step) from None


def unset_variables(missing: Mapping[str, Sequence[str]], *, before_start: bool = False) -> str:
    """The error for ``${VAR}``s without a default that are not set, by name, with the steps using
    them; ``before_start``: found before anything was deployed (the run does not start)."""
    what = "; ".join(f"environment variable {name} is not set (step {', '.join(repr(s) for s in steps)})"
                     for name, steps in missing.items())
    if before_start:
        return f"{what}: nothing was deployed (set it, or write ${{NAME:-default}} to give a default)"
    name = next(iter(missing))
    return f"{what}: set it, or write ${{{name}:-default}} to give a default"


def unset_env_vars(steps: Sequence[StepModel]) -> str | None:
    """Why a run must not start: a ``${VAR}`` without a default that is not set (checked before
    anything is deployed, so nothing starts only to fail later)."""
    missing: dict[str, list[str]] = {}
    for step in steps:
        for name in sorted(env_var_names(step.model_dump(by_alias=True)) - set(os.environ)):
            missing.setdefault(name, []).append(step.id)
    return unset_variables(missing, before_start=True) if missing else None


def partial_context(error: BaseException) -> RunContext | None:
    """What a failed step produced before it failed (a failed prompt still leaves its PromptResponse)."""
    return error.context if isinstance(error, StepError) else None


def _retry_span(step: StepModel, spans: Spans | None) -> list[str]:
    """The steps its ``retry_config`` re-runs ([] without retries)."""
    retry = step.retry_config
    if retry is None or retry.max_retries <= 0:
        return []
    if retry.retry_from_step_id == step.id:
        return [step.id]
    if spans is None:
        raise ConfigurationError(f"step '{step.id}': retry_config.retry_from_step_id '{retry.retry_from_step_id}' "
                                 "is not this step, and a step run on its own can only retry itself")
    return spans.span(retry.retry_from_step_id, step.id)


async def _retry(step: StepModel, inputs: list[RunContext], span: list[str], runner: Runner, record: StepRecord,
                 spans: Spans | None, error: Exception) -> tuple[RunContext | None, Exception]:
    """Re-run the span up to ``max_retries`` times; its output, or the step's last error."""
    retry = step.retry_config
    assert retry is not None
    delay = get_settings().retry_delay_seconds if retry.retry_delay_seconds is None else retry.retry_delay_seconds
    for _ in range(retry.max_retries):
        await asyncio.sleep(delay)
        await current_run().teardown.stop_owned_by(set(span))  # a retry starts clean
        attempts = record.attempts
        try:
            if span == [step.id]:
                return await attempt(step, inputs, runner, record), error
            assert spans is not None
            return await spans.rerun(span), error
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if record.attempts > attempts:  # the step itself failed again (not an earlier step of the span)
                error = exc
            if isinstance(exc, RetriesSpent):
                break
    return None, error


def _failed(step: StepModel, inputs: list[RunContext], error: Exception, record: StepRecord) -> RunContext:
    """A failure with its retries spent: raised when it fails the task, else recorded in the
    context it returns (the step's row in failed_steps; a verifier's errored verification)."""
    if step.fail_task_on_error:
        raise error
    record.state = "tolerated"
    partial = partial_context(error)
    ctx = RunContext.merge([partial] if partial is not None else inputs)
    ctx.metadata.failed_steps.append(FailedStep(
        step_id=step.id, step_type=step.type, error=record.error or "", error_type=record.error_type or "Exception",
        started_at=record.started_at or datetime.now(timezone.utc), duration_s=record.duration_s or 0.0))
    if isinstance(step, VerifierStep):
        # An errored verifier still counts, as 0: leaving it out would let a tolerated failure
        # raise the task score (docs/scoring.md, "Errors"). It scores 0 on its declared axes
        # (None: its rows come from a script).
        verification = errored(record.error or record.error_type or "failed", weight=step.weight,
                               axes=step.declared_axes(), step_type=step.type)
        ctx.metadata.verifications.setdefault(step.verifier_id, verification)
    return ctx


def _cause(error: Exception) -> Exception:
    """The step's own error (unwrapped from :class:`RetriesSpent`)."""
    return error.error if isinstance(error, RetriesSpent) else error
