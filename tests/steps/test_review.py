"""review: the flow run pauses with a form; a reviewer resumes it through the Prefect API with input."""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import UUID

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName
from prefect.flow_runs import aresume_flow_run
from typer.testing import CliRunner

from prefect_agentenv.cli import app
from prefect_agentenv.documents import validate_data
from prefect_agentenv.flows.agent_task import agent_task
from steps.helpers import run_doc, states

pytestmark = pytest.mark.usefixtures("prefect_harness", "agentenv_home")


def gated(task_id: str) -> Any:
    result = validate_data([
        {"id": "work", "type": "test_noop", "depends_on": []},
        {"id": "gate", "type": "review", "label": "Is the work right?", "poll_interval_seconds": 1,
         "timeout_seconds": 120},
        {"id": "after", "type": "test_noop"},
    ], default_id=task_id)
    assert result.ok, [p.render() for p in result.problems]
    return result.document


async def paused_run(name: str) -> UUID:
    """The flow run of that name once it is paused (what a reviewer sees in the UI)."""
    async with get_client() as client:
        for _ in range(300):
            runs = await client.read_flow_runs(flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[name])))
            if runs and runs[0].state and runs[0].state.is_paused():
                return runs[0].id
            await asyncio.sleep(0.2)
    raise AssertionError(f"flow run {name} never paused")


async def test_an_approved_review_lets_the_task_go_on_and_keeps_the_note() -> None:
    run = asyncio.create_task(agent_task(gated("review-approved"), return_state=True))
    flow_run_id = await paused_run("review-approved")

    await aresume_flow_run(flow_run_id, run_input={"approve": True, "note": "numbers check out"})
    state = await asyncio.wait_for(run, 60)

    report = await state.result()
    assert report["status"] == "completed"
    assert {s["id"]: s["state"] for s in report["steps"]} == {"work": "completed", "gate": "completed",
                                                              "after": "completed"}
    assert report["context"]["metadata"]["reviews"]["gate"] == {
        "label": "Is the work right?", "approved": True, "note": "numbers check out"}


async def test_a_review_rejected_from_the_terminal_fails_the_task_with_the_reviewers_note() -> None:
    run = asyncio.create_task(agent_task(gated("review-rejected"), return_state=True))
    flow_run_id = await paused_run("review-rejected")

    answer = await asyncio.to_thread(CliRunner().invoke, app, ["review", str(flow_run_id), "--reject",
                                                                "--note", "wrong quarter"])
    state = await asyncio.wait_for(run, 60)

    assert answer.exit_code == 0 and "rejected (wrong quarter)" in answer.output, answer.output

    assert state.is_failed()
    report = await state.result(raise_on_failure=False)
    assert {s["id"]: s["state"] for s in report["steps"]}["gate"] == "failed"
    assert "review 'Is the work right?' was rejected: wrong quarter" in (state.message or "")
    assert report["context"]["metadata"]["reviews"]["gate"]["approved"] is False

    again = await asyncio.to_thread(CliRunner().invoke, app, ["review", str(flow_run_id), "--approve"])
    assert again.exit_code == 1 and "cannot be resumed" in again.output


async def test_a_review_outside_a_flow_run_is_a_clear_error() -> None:
    report = await run_doc([{"id": "gate", "type": "review"}], task_id="no-flow")

    assert states(report) == {"gate": "failed"}
    assert "a review pauses a Prefect flow run, and this run has none" in (report.error or "")
