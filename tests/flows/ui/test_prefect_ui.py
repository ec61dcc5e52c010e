"""What the Prefect UI shows of a task run: tags, each step's log lines, the DAG's edges, retries as
attempts of one task run, and parameter descriptions on both deployments."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any
from uuid import UUID

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import LogFilter, LogFilterTaskRunId

from prefect_agentenv.deployments import build_deployments
from prefect_agentenv.documents import validate_data
from prefect_agentenv.flows.agent_task import agent_task
from prefect_reads import flushed_logs, settled_task_runs

pytestmark = pytest.mark.usefixtures("prefect_harness", "agentenv_home")


def doc(data: Any, task_id: str = "ui") -> Any:
    result = validate_data(data, default_id=task_id)
    assert result.ok, [p.render() for p in result.problems]
    return result.document


async def task_runs_of(flow_run_id: UUID, steps: int, *, all_completed: bool = False) -> dict[str, Any]:
    until = (lambda r: r.state.is_completed()) if all_completed else None
    return {r.name: r for r in await settled_task_runs([flow_run_id], at_least=steps, until=until)}


async def logs_of(task_run_id: UUID) -> list[str]:
    logs = await flushed_logs(LogFilter(task_run_id=LogFilterTaskRunId(any_=[task_run_id])))
    return [lg.message for lg in logs]


@pytest.fixture
def info_logs() -> Iterator[None]:
    """The suite runs Prefect at WARNING; the step lines are INFO, as in a default Prefect setup."""
    run_logger = logging.getLogger("prefect.task_runs")
    level = run_logger.level
    run_logger.setLevel(logging.INFO)
    yield
    run_logger.setLevel(level)


@pytest.mark.usefixtures("info_logs")
async def test_a_run_shows_the_document_tags_each_steps_story_and_edges_through_a_tolerated_failure() -> None:
    state = await agent_task(doc({"id": "ui-story", "tags": ["email", "nightly"], "steps": [
        {"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": []},
        {"id": "flaky", "type": "test_fail", "message": "the CRM said 503", "fail_task_on_error": False},
        {"id": "grade", "type": "test_score", "score": 0.5, "depends_on": ["flaky"]}]}), return_state=True)
    assert state.is_completed(), state.message
    flow_run_id = state.state_details.flow_run_id
    async with get_client() as client:
        flow_run = await client.read_flow_run(flow_run_id)
    assert {"email", "nightly"} <= set(flow_run.tags)

    runs = await task_runs_of(flow_run_id, 3)
    email_lines = await logs_of(runs["email"].id)
    assert any(line.startswith("deployed env email") and "MCP at http://127.0.0.1:" in line
               for line in email_lines), email_lines
    flaky_lines = await logs_of(runs["flaky"].id)
    assert any("flaky (test_fail) failed: the CRM said 503" in line for line in flaky_lines), flaky_lines
    assert any("verification score: score 0.5" in line for line in await logs_of(runs["grade"].id))

    upstream = {i.id for i in runs["grade"].task_inputs["inputs"]}
    assert runs["flaky"].id in upstream  # the edge survives the failure the task tolerated
    assert runs["email"].id in {i.id for i in runs["flaky"].task_inputs["inputs"]}


async def test_a_step_that_retries_itself_is_one_task_run_with_several_attempts() -> None:
    state = await agent_task(doc([
        {"id": "flaky", "type": "test_fail", "fail_times": 1, "depends_on": [],
         "retry_config": {"retry_from_step_id": "flaky", "max_retries": 2, "retry_delay_seconds": 0}}]),
        return_state=True)
    assert state.is_completed(), state.message
    runs = await task_runs_of(state.state_details.flow_run_id, 1, all_completed=True)
    assert list(runs) == ["flaky"]
    assert runs["flaky"].run_count == 2 and runs["flaky"].state.is_completed()


async def test_a_retried_span_shows_as_second_attempts_of_the_same_task_runs() -> None:
    state = await agent_task(doc([
        {"id": "setup", "type": "test_noop", "depends_on": []},
        {"id": "flaky", "type": "test_fail", "fail_times": 1,
         "retry_config": {"retry_from_step_id": "setup", "max_retries": 1}}]), return_state=True)
    assert state.is_completed(), state.message
    runs = await task_runs_of(state.state_details.flow_run_id, 2, all_completed=True)
    assert sorted(runs) == ["flaky", "setup"]
    assert runs["setup"].run_count == 2 and runs["flaky"].run_count == 2
    assert runs["flaky"].state.is_completed()


def test_every_parameter_of_both_deployments_has_a_description_and_each_deployment_an_example() -> None:
    for deployment in build_deployments(cron=None):
        properties = deployment._parameter_openapi_schema.properties
        assert properties and all(p.get("description") for p in properties.values()), deployment.name
        assert "Example" in (deployment.description or ""), deployment.name
