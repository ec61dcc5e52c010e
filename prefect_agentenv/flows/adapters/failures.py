"""Agent or infrastructure: whose failure a benchmark's task run was, read from what failed.

A run that did not pass gets a :class:`FailureCause`. It is the **agent's** when the agent had its
chance and used it badly: a reply graded below 1, an agent that answered with an error, a prompt
or a task run that ran out of time, a step after the prompt that failed (unless the store or a
peer's connection failed under it). It is the
**infrastructure's** when the agent never had a fair attempt: a deploy that failed, a step that
failed before any prompt reached the agent, an env or agent that exited on its own before that, a
verifier that could not grade, a Prefect API call that failed, a run that ended without a report
or was stopped from outside.

Only typed signals are read, never message texts: the failed step's type and its error's class
name (the report's ``steps``), whether the run holds a PromptResponse (a prompt was sent), the
teardown's record of an instance that exited on its own, the run's stop reason and outcome, the
class of an error the benchmark caught itself. docs/scoring.md states the rules.
"""

from __future__ import annotations

import math

import httpx
from prefect.exceptions import PrefectException
from prefect.tasks import exponential_backoff
from prefect.utilities.math import clamped_poisson_interval

from prefect_agentenv.artifacts.keys import UnsafeKeyError
from prefect_agentenv.context import StepRecord
from prefect_agentenv.documents.benchmarks.infrastructure import InfrastructurePolicy
from prefect_agentenv.documents.models import TaskDocument
from prefect_agentenv.exceptions import (
    AgentTimeoutError,
    ConfigurationError,
    ContextConflictError,
    DeployError,
    InstanceExitedError,
    NotInContextError,
    PeerUnavailableError,
    PrefectApiUnavailableError,
    ResourceLimitError,
    TaskDocumentError,
)
from prefect_agentenv.grading.outcome import Outcome
from prefect_agentenv.grading.verification import read_all
from prefect_agentenv.results import FailureCause, FailureKind, FailureSummary
from prefect_agentenv.results.task_report import TaskReport
from prefect_agentenv.runtime.resources.sandbox import UnsafeSandboxPathError
from prefect_agentenv.steps.base import StepModel, VerifierStep
from prefect_agentenv.steps.prompt_agent import PromptAgentStep

_REPEATING: tuple[type[Exception], ...] = (ConfigurationError, TaskDocumentError, NotInContextError,
                                           ContextConflictError, UnsafeSandboxPathError, UnsafeKeyError)
"""Errors that fail the same way on every attempt: a missing block, a document mistake."""
_RETRIED_HTTP = frozenset({408, 429})
"""Client-error statuses a later request may not get (besides every 5xx)."""
_MAX_MESSAGE = 300
_JITTER = 0.2
"""Each back-off is drawn within ±20% of its nominal value, so retries that failed together do not
all come back at once (as Prefect's client jitters its own)."""


def classify_report(report: TaskReport, document: TaskDocument) -> FailureCause | None:
    """Why a task run that wrote its report did not pass; ``None`` when it passed or was UNSCORED.

    In order: a stop from outside, the run's time limit, an env or agent that exited on its own,
    the earliest step that failed (fatal or tolerated), a run that failed without a failed step,
    a verifier recorded as errored, a score below 1.
    """
    if report.status == "completed" and report.outcome in (Outcome.PASSED, Outcome.UNSCORED):
        return None
    if report.stop_reason:
        return _infrastructure("stopped", message=report.error)
    if report.outcome is Outcome.TIMED_OUT:
        return FailureCause(kind="agent", reason="timed_out", message=_first_line(report.error))
    sent = bool(report.context.prompt_responses)
    exited = next((t for t in report.teardown if t.crashed), None)
    if exited is not None and exited.limit:  # it used more than the task allows: its own doing, not retried
        return FailureCause(kind="agent", reason="resource_limit", retryable=False, step_id=exited.owner_step,
                            error_type=InstanceExitedError.__name__,
                            message=f"{exited.label} was stopped by its {exited.limit}")
    if exited is not None:
        owner = next((s for s in report.steps if s.id == exited.owner_step), None)
        return FailureCause(kind="agent" if sent else "infrastructure", reason="instance_exited", retryable=not sent,
                            step_id=exited.owner_step, step_type=owner.type if owner else None,
                            error_type=InstanceExitedError.__name__,
                            message=f"{exited.label} exited on its own with exit code {exited.exit_code}")
    failed = [s for s in report.steps if s.state in ("failed", "tolerated")]
    if failed:
        first = min(failed, key=lambda s: s.started_at.timestamp() if s.started_at else math.inf)
        return step_failure(first, report, document)
    if report.status == "failed":
        started = any(s.started_at is not None for s in report.steps)
        return _infrastructure("runner_error" if started else "not_started", message=report.error,
                               retryable=started)
    return _unfailed_steps(report)


def _unfailed_steps(report: TaskReport) -> FailureCause | None:
    """A completed run below 1 with no failed step: an errored verification, else the answer."""
    for verifier_id, verification in read_all(report.context.metadata.verifications).items():
        if verification.errored and verification.weight > 0:
            return _infrastructure("verifier_failed", step_id=verifier_id, step_type=verification.step_type,
                                   message=verification.error)
    if report.outcome is Outcome.BELOW_ONE:
        score = "-" if report.score is None else f"{report.score:.3f}"
        return FailureCause(kind="agent", reason="below_one", message=f"graded {score}, below 1")
    return _infrastructure("runner_error", message=report.error)


def step_failure(record: StepRecord, report: TaskReport, document: TaskDocument) -> FailureCause:
    """Whose failure a failed step is, with the step and the first line of its error."""
    kind, reason, retryable = _step_verdict(record, report, document)
    return FailureCause(kind=kind, reason=reason, retryable=retryable, step_id=record.id, step_type=record.type,
                        error_type=record.error_type, message=_first_line(record.error))


def _step_verdict(record: StepRecord, report: TaskReport, document: TaskDocument) -> tuple[FailureKind, str, bool]:
    """By the error's class, the step's type, and whether a prompt was sent before (a prompt step
    counts as sent once it recorded its PromptResponse): kind, reason, retryable."""
    step = _step(document, record.id)
    if record.error_type in _class_names(PrefectApiUnavailableError):  # a ConfigurationError, but transient
        return "infrastructure", "prefect_api", True
    if record.error_type in _class_names(*_REPEATING):
        return "infrastructure", "configuration", False
    if record.error_type in _class_names(ResourceLimitError):  # before DeployError: one of its kinds
        return "agent", "resource_limit", False
    if record.error_type in _class_names(DeployError):
        return "infrastructure", "deploy_failed", True
    if record.error_type in _class_names(PeerUnavailableError):  # before or after the prompt
        return "infrastructure", "peer_unavailable", True
    if isinstance(step, VerifierStep):
        return "infrastructure", "verifier_failed", True
    if isinstance(step, PromptAgentStep):
        response = report.context.prompt_responses.get(step.prompt_id)
        if response is None:  # it failed configuring or reaching the agent: the prompt never left
            return "infrastructure", "setup_failed", True
        timed_out = response.is_timeout or record.error_type in _class_names(AgentTimeoutError)
        return "agent", "prompt_timeout" if timed_out else "agent_error", False
    if not report.context.prompt_responses:
        return "infrastructure", "setup_failed", True
    return "agent", "step_failed", False


def dispatch_failure(error: Exception) -> FailureCause:
    """A task run the benchmark could not start, follow or record: a Prefect API call that failed
    (after the client's own retries) or another error of the benchmark's own code."""
    if isinstance(error, httpx.HTTPStatusError):
        status = error.response.status_code
        reason, retryable = "prefect_api", status >= 500 or status in _RETRIED_HTTP
    elif isinstance(error, httpx.TransportError):
        reason, retryable = "prefect_api", True
    elif isinstance(error, PrefectException):  # the API refused (an unknown deployment, a conflict)
        reason, retryable = "prefect_api", False
    else:
        reason, retryable = "runner_error", True
    return _infrastructure(reason, retryable=retryable, error_type=type(error).__name__,
                           message=f"{type(error).__name__}: {error}")


def no_report_failure(message: str) -> FailureCause:
    """A task run whose flow run or task run ended without a report (it crashed, or was cancelled)."""
    return _infrastructure("no_report", message=message)


def timeout_failure(message: str) -> FailureCause:
    """A task run cut by its time limit in the benchmark: the agent's time ran out."""
    return FailureCause(kind="agent", reason="timed_out", message=message)


def should_retry(failure: FailureCause | None, retries_done: int, policy: InfrastructurePolicy) -> bool:
    """Whether a run whose attempt ended with ``failure`` is attempted again."""
    return (failure is not None and failure.infrastructure and failure.retryable
            and retries_done < policy.retries)


def retry_delay(policy: InfrastructurePolicy, retry: int) -> float:
    """Seconds to wait before retry number ``retry`` (1-based): Prefect's exponential back-off of
    ``backoff_seconds`` (1×, 2×, 4×…) with its jitter."""
    nominal = exponential_backoff(policy.backoff_seconds)(retry)[-1]
    return clamped_poisson_interval(nominal, clamping_factor=_JITTER) if nominal > 0 else 0.0


def infrastructure_verdict(failures: FailureSummary, total: int, policy: InfrastructurePolicy) -> str | None:
    """Why the benchmark fails, when more of its runs failed for infrastructure (after their
    retries) than ``max_error_rate`` allows; ``None`` otherwise."""
    limit, rate = policy.max_error_rate, failures.infrastructure_rate
    if limit is None or rate is None or rate <= limit:
        return None
    reasons = ", ".join(f"{reason} ×{n}" for reason, n in failures.infrastructure_reasons.items())
    return (f"{failures.infrastructure} of {total} task runs ({rate:.0%}) failed for infrastructure after "
            f"up to {policy.retries} retries ({reasons}), more than infrastructure.max_error_rate {limit:g} "
            "allows; the mean score would measure the setup, not the agent")


def _infrastructure(reason: str, *, retryable: bool = True, step_id: str | None = None,
                    step_type: str | None = None, error_type: str | None = None,
                    message: str | None = None) -> FailureCause:
    return FailureCause(kind="infrastructure", reason=reason, retryable=retryable, step_id=step_id,
                        step_type=step_type, error_type=error_type, message=_first_line(message))


def _step(document: TaskDocument, step_id: str) -> StepModel | None:
    try:
        return document.step(step_id)
    except KeyError:  # a step the run added (isolated scoring's own): known by its record only
        return None


def _class_names(*classes: type[BaseException]) -> frozenset[str]:
    """The names of these classes and of every subclass defined so far (plugins' included)."""
    names: set[str] = set()
    stack = list(classes)
    while stack:
        cls = stack.pop()
        if cls.__name__ not in names:
            names.add(cls.__name__)
            stack.extend(cls.__subclasses__())
    return frozenset(names)


def _first_line(text: str | None) -> str | None:
    if not text:
        return None
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= _MAX_MESSAGE else line[:_MAX_MESSAGE - 1] + "…"
