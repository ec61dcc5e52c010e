"""The parts of failure classification that need no run: errors the benchmark catches itself, the
retry decision and its back-off, the verdict on too many infrastructure failures. Classifying real
runs' reports is in tests/faults/test_infrastructure_failures.py."""

from __future__ import annotations

import httpx
import pytest
from prefect.exceptions import ObjectNotFound

from prefect_agentenv.documents.benchmarks.infrastructure import InfrastructurePolicy
from prefect_agentenv.flows.adapters.failures import (
    dispatch_failure,
    infrastructure_verdict,
    no_report_failure,
    retry_delay,
    should_retry,
    timeout_failure,
)
from prefect_agentenv.results import FailureSummary

API = "http://127.0.0.1:4200/api/task_runs/"


def _status_error(status: int) -> httpx.HTTPStatusError:
    request = httpx.Request("POST", API)
    return httpx.HTTPStatusError(f"Server error '{status}'", request=request,
                                 response=httpx.Response(status, request=request))


@pytest.mark.parametrize(("error", "retryable"), [
    (_status_error(503), True),
    (_status_error(429), True),
    (_status_error(422), False),
    (httpx.ConnectError("connection refused", request=httpx.Request("POST", API)), True),
    (ObjectNotFound(http_exc=_status_error(404), help_message="deployment not found"), False),
])
def test_a_prefect_api_error_is_an_infrastructure_failure_retried_unless_the_api_refused(
        error: Exception, retryable: bool) -> None:
    cause = dispatch_failure(error)
    assert (cause.kind, cause.reason, cause.retryable, cause.error_type) == (
        "infrastructure", "prefect_api", retryable, type(error).__name__)
    assert cause.message and cause.message.startswith(type(error).__name__)


def test_another_error_of_the_benchmark_is_a_retried_runner_error_named_by_its_first_line() -> None:
    cause = dispatch_failure(RuntimeError("the store went away\nTraceback (most recent call last): ..."))
    assert (cause.reason, cause.retryable, cause.message) == ("runner_error", True,
                                                              "RuntimeError: the store went away")


def test_only_a_retryable_infrastructure_failure_with_retries_left_is_retried() -> None:
    policy = InfrastructurePolicy(retries=2)
    crashed = no_report_failure("the task's flow run ended without a report")
    assert should_retry(crashed, 0, policy) and should_retry(crashed, 1, policy)
    assert not should_retry(crashed, 2, policy)
    assert not should_retry(crashed.model_copy(update={"retryable": False}), 0, policy)
    assert not should_retry(timeout_failure("the task did not finish within 60s"), 0, policy)
    assert not should_retry(None, 0, policy)
    assert not should_retry(crashed, 0, InfrastructurePolicy(retries=0))


def test_the_back_off_doubles_from_backoff_seconds_within_its_jitter() -> None:
    policy = InfrastructurePolicy(backoff_seconds=10)
    for retry, nominal in ((1, 10), (2, 20), (3, 40)):
        delays = [retry_delay(policy, retry) for _ in range(200)]
        assert all(0 <= d <= nominal * 1.2 for d in delays) and len(set(delays)) > 1
        assert sum(delays) / len(delays) == pytest.approx(nominal, rel=0.15)
    assert retry_delay(InfrastructurePolicy(backoff_seconds=0), 1) == 0.0


def test_more_infrastructure_failures_than_the_policy_allows_is_a_verdict_naming_them() -> None:
    failures = FailureSummary(infrastructure=3, infrastructure_rate=0.3,
                              infrastructure_reasons={"deploy_failed": 2, "prefect_api": 1})
    verdict = infrastructure_verdict(failures, 10, InfrastructurePolicy(max_error_rate=0.2))
    assert verdict == ("3 of 10 task runs (30%) failed for infrastructure after up to 2 retries "
                       "(deploy_failed ×2, prefect_api ×1), more than infrastructure.max_error_rate 0.2 allows; "
                       "the mean score would measure the setup, not the agent")
    assert infrastructure_verdict(failures, 10, InfrastructurePolicy(max_error_rate=0.3)) is None  # at the limit
    assert infrastructure_verdict(failures, 10, InfrastructurePolicy()) is None  # no limit set
