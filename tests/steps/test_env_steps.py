"""Env steps end to end against the real reference env processes."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import httpx
import pytest

from prefect_agentenv.artifacts import get_artifact_store

from .helpers import run_doc, states

pytestmark = pytest.mark.usefixtures("published")

EMAIL_PIPELINE: list[dict[str, Any]] = [
    {"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": []},
    {"id": "inbox", "type": "load_artifact", "env_id": "email", "artifact_id": "inbox"},
    {"id": "clock", "type": "sync_env_clock", "env_id": "email", "time": "2026-10-02T10:00:00Z"},
    {"id": "later", "type": "register_env_triggers", "env_id": "email",
     "triggers": [{"at": "2026-10-02T11:00:00Z", "action": "deliver_email",
                   "data": {"id": "m3", "from": "dana@northwind.example", "to": ["sam@northwind.example"],
                            "subject": "Re: Q3 numbers", "body": "Any update?"}}]},
    {"id": "tick", "type": "sync_env_clock", "env_id": "email", "advance_seconds": 3600},
    {"id": "snapshot", "type": "snapshot_env", "env_id": "email", "artifact_id": "email-after"},
    {"id": "outcome", "type": "env_outcome_verifier", "env_id": "email", "verifier_id": "delivered",
     "script_artifact_id": "verify-delivery"},
    {"id": "state", "type": "env_state_verifier", "env_id": "email", "verifier_id": "mailbox",
     "assertions": [
         {"assert": "state_match", "id": "dana_follow_up",
          "correlate_by": {"resource": "emails", "key": "id", "value": "m3"},
          "assertions": [{"path": "subject", "expected": "Re: Q3 numbers"}, {"path": "folder", "expected": "inbox"}]},
         {"assert": "record_count", "id": "nothing_sent", "resource": "sent", "equals": 0},
     ]},
]


async def test_the_email_env_is_deployed_seeded_driven_snapshotted_verified_and_stopped() -> None:
    report = await run_doc(EMAIL_PIPELINE, "email-pipeline")
    assert report.status == "completed", report.error
    assert set(states(report).values()) == {"completed"}
    env = report.context.deployed_envs["email"]
    assert env.version == "1.0.0" and env.mcp_url.endswith("/mcp") and env.instance_id.startswith("email-")
    verifications = report.context.metadata.verifications
    assert verifications["delivered"].score == 1.0
    assert [r.id for r in verifications["delivered"].results] == ["follow_up_delivered", "seed_kept"]
    assert verifications["mailbox"].score == 1.0
    evidence = (verifications["mailbox"].results[0].model_extra or {})["evidence"]
    assert evidence["checks"][0]["expected"] == "Re: Q3 numbers" and evidence["checks"][0]["actual"] == "Re: Q3 numbers"
    assert report.outcome.value == "PASSED" and report.score == 1.0
    snap = report.context.metadata.env_snapshots["snapshot"]
    with get_artifact_store() as store:
        meta = store.get_metadata("email-after", snap.artifact.version)
        state = json.loads(store.read_file(meta, "state.json"))
    assert meta.environment_name == "email" and any(e["id"] == "m3" for e in state["emails"])
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{env.base_url}/.well-known/agent-env.json", timeout=2)
    assert any(t.label.startswith("env email") and t.ok for t in report.teardown)


async def test_a_snapshot_loads_back_into_a_fresh_env() -> None:
    first = await run_doc(EMAIL_PIPELINE[:6], "snap")
    assert first.status == "completed", first.error
    report = await run_doc([
        {"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": []},
        {"id": "restore", "type": "load_artifact", "env_id": "email", "artifact_id": "email-after"},
        {"id": "check", "type": "env_state_verifier", "env_id": "email", "verifier_id": "restored",
         "assertions": [{"assert": "record_count", "id": "three_emails", "resource": "emails", "equals": 3}]},
    ], "restore")
    assert report.context.metadata.verifications["restored"].score == 1.0


async def test_the_records_env_state_is_checked_with_typed_assertions_and_evidence() -> None:
    report = await run_doc([
        {"id": "records", "type": "deploy_env", "env_id": "records", "depends_on": []},
        {"id": "seed", "type": "load_artifact", "env_id": "records", "artifact_id": "clinic"},
        {"id": "check", "type": "env_state_verifier", "env_id": "records", "verifier_id": "clinic",
         "score_aggregator": "weighted_average",
         "assertions": [
             {"assert": "state_match", "id": "referral_received",
              "correlate_by": {"resource": "referrals", "key": "referral_id", "value": "R1"},
              "assertions": [{"path": "status", "expected": "received"}, {"path": "cpt_code", "expected": 72148}]},
             {"assert": "state_match", "id": "request_submitted", "weight": 2,
              "correlate_by": {"resource": "requests", "key": "patient_id", "value": "P1"},
              "assertions": [{"path": "status", "expected": "submitted"}]},
             {"assert": "record_count", "id": "one_unread_fax", "resource": "inbox", "where": {"read": False},
              "equals": 1},
         ]},
    ], "records-check")
    assert report.status == "completed", report.error
    v = report.context.metadata.verifications["clinic"]
    rows = {r.id: r.model_dump() for r in v.results}
    assert rows["referral_received"]["result"] == "pass"
    assert rows["request_submitted"]["result"] == "fail"
    assert "no record in 'requests'" in rows["request_submitted"]["justification"]
    assert rows["one_unread_fax"]["evidence"] == {"resource": "inbox", "where": {"read": False}, "actual": 1,
                                                  "expected": {"equals": 1}}
    assert v.score == pytest.approx(2 / 4)
    assert report.outcome.value == "BELOW_ONE"


async def test_an_artifact_for_another_environment_is_refused_with_a_clear_error() -> None:
    report = await run_doc([
        {"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": []},
        {"id": "wrong", "type": "load_artifact", "env_id": "email", "artifact_id": "clinic"},
    ])
    assert report.status == "failed"
    assert "is for environment 'records', but env 'email' is 'email'" in (report.error or "")


async def test_a_missing_artifact_fails_its_step_and_names_it() -> None:
    report = await run_doc([
        {"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": []},
        {"id": "nope", "type": "load_artifact", "env_id": "email", "artifact_id": "no-such-artifact"},
    ])
    assert report.status == "failed" and "no-such-artifact" in (report.error or "")


async def test_a_hanging_verify_script_fails_only_its_own_step(tmp_path: Path) -> None:
    script = tmp_path / "hang.py"
    script.write_text(textwrap.dedent("""
        import asyncio
        async def verify(mcp_url):
            await asyncio.sleep(60)
    """))
    broken = tmp_path / "broken.py"
    broken.write_text("def verify(:\n")
    with get_artifact_store() as store:
        store.publish_files("hang", {"verify.py": script})
        store.publish_files("broken", {"verify.py": broken})
    report = await run_doc([
        {"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": []},
        {"id": "hang", "type": "env_outcome_verifier", "env_id": "email", "verifier_id": "hang",
         "script_artifact_id": "hang", "timeout_seconds": 1, "fail_task_on_error": False, "depends_on": ["email"]},
        {"id": "broken", "type": "env_outcome_verifier", "env_id": "email", "verifier_id": "broken",
         "script_artifact_id": "broken", "fail_task_on_error": False, "depends_on": ["email"]},
        {"id": "ok", "type": "env_outcome_verifier", "env_id": "email", "verifier_id": "ok",
         "script_artifact_id": "verify-delivery", "depends_on": ["email"]},
    ])
    assert report.status == "completed"
    assert states(report) == {"email": "completed", "hang": "tolerated", "broken": "tolerated", "ok": "completed"}
    failed = {f.step_id: f for f in report.context.metadata.failed_steps}
    assert failed["hang"].error_type == "AgentTimeoutError" and "within 1s" in failed["hang"].error
    assert "SyntaxError" in failed["broken"].error
    assert report.duration_s < 20


async def test_teardown_sandboxes_stops_envs_early_and_records_it() -> None:
    report = await run_doc([
        {"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": []},
        {"id": "down", "type": "teardown_sandboxes"},
    ])
    assert report.status == "completed"
    (stopped,) = report.context.metadata.teardowns["down"]
    assert stopped.kind == "env" and stopped.name == "email" and stopped.ok is True
