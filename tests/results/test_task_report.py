"""The report's typed parts: what a run hands on is read by attribute, what it writes keeps every byte,
and a report of another version is still read."""

from __future__ import annotations

import json
import warnings
from datetime import datetime, timezone

from prefect_agentenv.context import FailedStep, RunContext, StepRecord, Verification
from prefect_agentenv.engine.reporting import build_report
from prefect_agentenv.engine.scheduler import ScheduleResult
from prefect_agentenv.grading.verification import scored
from prefect_agentenv.results.task_report import TaskReport, verification_rows
from prefect_agentenv.runtime.resources.teardown import TeardownRecord

SECRET = "tok-9f8e7d6c5b"


def _result() -> ScheduleResult:
    ctx = RunContext()
    ctx.metadata.verifications["state"] = scored([{"id": "sent", "result": "pass", "score": 1.0, "weight": 1.0,
                                                   "justification": f"used {SECRET}"}],
                                                 aggregator="all_pass", weight=1.0, fmt="state_assertions", env_id="email")
    # A plugin's record, as a plain mapping in its own key order.
    ctx.metadata.verifications["plugin"] = {"weight": 2.0, "score": 0.5, "results": [], "note": "by hand"}
    ctx.metadata.verifications["judge"] = Verification.written(format="rubric_binary", results=[], score=None,
                                                               weight=1.0, error="unreadable", raw_outputs=["?"])
    started = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)
    ctx.metadata.failed_steps.append(FailedStep(step_id="extra", step_type="run_code", error=f"{SECRET} refused",
                                                error_type="StepError", started_at=started, duration_s=0.1))
    step = StepRecord(id="email", type="deploy_env", state="completed", started_at=started, duration_s=0.5, attempts=1)
    return ScheduleResult(context=ctx, records={"email": step})


def test_the_report_is_typed_masks_secrets_when_written_and_reads_back_to_the_same_bytes() -> None:
    teardown = [TeardownRecord("env email (email-1)", "env", "email", True, 0.1)]
    report = build_report(task_id="t", flow_run_id=None, result=_result(), started_at="2026-01-01T12:00:00+00:00",
                          duration_s=1.0, teardown=teardown, warnings=[], secrets={SECRET})
    verifications = report.context.metadata.verifications
    assert verifications["state"].score == 1.0 and verifications["plugin"].score == 0.5
    assert verifications["state"].results[0].justification == "used ***"
    assert report.steps[0].state == "completed" and report.teardown[0].ok is True
    assert [r["justification"] for r in verification_rows(report)] == ["used ***", "", ""]

    written = json.loads(report.model_dump_json())
    assert SECRET not in json.dumps(written)
    assert list(written["context"]["metadata"]["verifications"]["plugin"]) == ["weight", "score", "results", "note"]
    assert list(written["context"]["metadata"]["verifications"]["judge"]) == [
        "format", "results", "score", "weight", "error", "raw_outputs"]
    assert written["steps"][0]["started_at"] == "2026-01-01T12:00:00+00:00"
    assert TaskReport.model_validate_json(report.model_dump_json()).model_dump_json() == report.model_dump_json()
    assert report.context.metadata.failed_steps[0].error == "*** refused"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the Python form too: its datetimes stay datetimes, with no warning
        assert isinstance(report.model_dump()["context"]["metadata"]["failed_steps"][0]["started_at"], datetime)


def test_a_report_of_another_version_is_read_with_the_keys_it_does_not_know_dropped() -> None:
    report = build_report(task_id="t", flow_run_id=None, result=_result(), started_at="2026-01-01T12:00:00+00:00",
                          duration_s=1.0, teardown=[], warnings=[])
    data = json.loads(report.model_dump_json())
    data["context"]["deployed_envs"] = {"email": {"env_id": "email", "instance_id": "email-1",
                                                  "mcp_url": "http://127.0.0.1:1/mcp", "region": "later"}}
    data["context"]["later_channel"] = {"x": 1}
    data["context"]["metadata"]["verifications"]["odd"] = {"score": "high", "results": ["not a row"]}
    data["steps"][0]["queue"] = "later"

    read = TaskReport.model_validate(data)

    assert read.context.deployed_envs["email"].mcp_url == "http://127.0.0.1:1/mcp"
    odd = read.context.metadata.verifications["odd"]
    assert odd.score is None and odd.results == [] and odd.counted_score == 0.0
    assert read.steps[0].id == "email" and read.steps[0].model_extra == {"queue": "later"}
