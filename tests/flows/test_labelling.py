"""The labelling flow, driven through the Prefect API as the UI drives it: the flow run pauses with a
typed form per sampled task run, the form's schema and description are read, an answer resumes it,
and the answers become versioned labels that calibration reads.

The judged run is real: three task runs over the email env, graded by a panel on the built-in mock
model (labelled), their reports stored and recorded as a benchmark run.
"""

from __future__ import annotations

import asyncio
from uuid import UUID

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName
from prefect.flow_runs import aresume_flow_run
from prefect.input.actions import read_flow_run_input
from prefect.input.run_input import keyset_from_paused_state

from commands.test_calibrate import CRITERIA, JUDGES
from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.documents import validate_data
from prefect_agentenv.flows.calibrate import calibrate_judges
from prefect_agentenv.flows.labelling import label_judged_run
from prefect_agentenv.results import summarize
from prefect_agentenv.results.judges.calibration import calibrate, run_judgements
from prefect_agentenv.results.judges.label_pool import load_run_labels
from prefect_agentenv.results.judges.labels import load_labels
from prefect_agentenv.results.result_row import result_from_report
from prefect_agentenv.results.rows import RunKey
from prefect_agentenv.results.store.run_store import ResultsStore, read_results, task_key
from steps.helpers import publish_examples, run_doc
from steps.test_rubrics_verifier import dana

pytestmark = pytest.mark.usefixtures("prefect_harness", "agentenv_home")


async def judged_run(epochs: int) -> str:
    publish_examples()
    panel = {"id": "grade", "type": "rubrics_verifier", "prompt_id": "reply", "verifier_id": "rubric",
             "criteria": CRITERIA, "depends_on": ["reply"], "judges": JUDGES, "judge_mode": "model"}
    with get_artifact_store() as store:
        run = ResultsStore(store, "mail", "r1")
        run.record_started(started_at="2025-01-01T02:00:00+00:00")
        document = validate_data([*dana(), panel], default_id="reply").document
        assert document is not None
        snapshot = run.snapshot_task(task_key("reply", 0), document.model_dump(mode="json", by_alias=True))
        for epoch in range(epochs):
            report = await run_doc([*dana(), panel], task_id="reply")
            key = f"reports/reply-{epoch}.json"
            store.put_object(key, report.model_dump_json())
            run.append(result_from_report(report, RunKey("reply", 0, epoch), report_url=store.object_url(key),
                                          snapshot=snapshot))
        run.record_finished(summarize(run.read_results()), finished_at="2025-01-01T02:05:00+00:00")
    return "mail/r1"


async def paused(name: str, pause: int) -> UUID:
    """The flow run of that name once it waits on its ``pause``-th form (what a reviewer sees in the UI)."""
    async with get_client() as client:
        for _ in range(600):
            runs = await client.read_flow_runs(flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[name])))
            state = runs[0].state if runs else None
            if state is not None and state.is_paused() and state.state_details.pause_key == f"label-{pause}":
                return runs[0].id
            await asyncio.sleep(0.2)
    raise AssertionError(f"flow run {name} never paused on form {pause}")


async def form_of(flow_run_id: UUID) -> tuple[dict, str]:
    """The form's JSON schema and its description, read as the UI reads them."""
    async with get_client() as client:
        state = (await client.read_flow_run(flow_run_id)).state
    assert state is not None
    keyset = keyset_from_paused_state(state)
    return (await read_flow_run_input(keyset["schema"], flow_run_id=flow_run_id),
            await read_flow_run_input(keyset["description"], flow_run_id=flow_run_id))


async def test_a_reviewer_labels_sampled_task_runs_through_paused_forms_and_calibration_reads_the_labels() -> None:
    run = await judged_run(epochs=3)
    name = "label mail/r1 by ana"
    flow_run = asyncio.create_task(label_judged_run(run=run, reviewer="ana", n=2, poll_interval_seconds=1,
                                                    timeout_seconds=300, return_state=True))

    first = await paused(name, 1)
    schema, description = await form_of(first)
    assert schema["properties"]["criterion_1"]["title"] == "rubric / k1"
    choice = schema["properties"]["criterion_1"]
    assert choice["enum"] == ["pass", "fail"] and "default" not in choice  # one select: pass, fail, or blank
    assert "criterion_1" not in schema.get("required", [])
    assert description.startswith("### Task run 1 of 2: `reply [seed 0, epoch ")
    assert "> Reply to Dana." in description and "`rubric / k2` — Criterion number 2 holds." in description
    assert "mock judge" not in description  # the judge's verdict is not shown to the reviewer
    await aresume_flow_run(first, run_input={"criterion_1": "pass", "note_1": "sent", "criterion_2": "fail",
                                             "criterion_3": "fail", "criterion_4": "pass"})

    second = await paused(name, 2)
    await aresume_flow_run(second, run_input={"criterion_2": "pass", "note_2": "names the numbers"})
    state = await asyncio.wait_for(flow_run, 120)
    assert state.is_completed(), state.message
    assert state.message.startswith("5 labels from ana on 2 task runs of mail/r1")

    with get_artifact_store() as store:
        labels = load_labels(store, "mail", "r1")
        judged = run_judgements(store, read_results(store, "mail", "r1"))
    assert len(labels) == 5 and {label.source for label in labels} == {"ui"}
    assert [(lb.criterion_id, lb.label, lb.note) for lb in labels][-1] == ("k2", "pass", "names the numbers")
    assert all(lb.criteria_hash == judged[0].setup.criteria for lb in labels)
    with get_artifact_store() as store:
        [record] = calibrate([judged[0].setup], [(load_run_labels(store, "mail", "r1"), judged)], benchmark="mail",
                             run_id="r1")
    assert record.labels == 5 and record.panel.criteria["k2"].n == 2

    shown = await calibrate_judges(run=run, return_state=True)  # a look records nothing
    assert shown.is_completed() and shown.message.startswith("shown, not recorded, 1 judge setup(s)"), shown.message
    with get_artifact_store() as store:
        assert store.list_versions(f"calibration.{record.fingerprint}") == []
    calibrated = await calibrate_judges(run=run, record=True, return_state=True)
    assert calibrated.is_completed(), calibrated.message
    assert calibrated.message == f"recorded 1 judge setup(s) ({record.fingerprint}: {record.brief()})"
