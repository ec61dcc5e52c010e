"""The records env's channels Verial tasks use: file drops, HL7 results, voicemail, the call log,
the outbound fax queue, the prior_auth_requests view, and the criteria that read them."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import pytest

from prefect_agentenv.envs.records.env import RecordsEnv
from prefect_agentenv.envs.records.store import Records
from prefect_agentenv.envs.server import VirtualClock
from prefect_agentenv.grading.assertions import FaxContent, VoiceTranscript, evaluate


def records_with(data: dict[str, Any]) -> Records:
    records = Records(VirtualClock())
    records.load([data])
    return records


def test_drop_file_inbox_files_the_entity_as_a_document_in_the_inbound_folder() -> None:
    records = records_with({"patients": [{"patient_id": "P1", "name": "Ana"}]})
    at = datetime(2026, 1, 5, 9, tzinfo=timezone.utc)
    doc = records.drop_file({"referral_id": "R1", "patient_id": "P1", "cpt_code": "72148",
                             "inbound_path": "inbox/"}, at)
    assert (doc.document_id, doc.path, doc.title, doc.kind) == ("DOC-0001", "inbox/DOC-0001.txt", "Referral R1", "fax")
    assert "cpt code: 72148" in doc.content and doc.received_at == at


def test_the_export_shows_prior_auth_requests_and_loads_back() -> None:
    records = records_with({"patients": [{"patient_id": "P1", "name": "Ana"}],
                            "prior_auth_requests": [{"request_id": "Q1", "patient_id": "P1", "status": "submitted"}]})
    state = records.export()
    assert [r["request_id"] for r in state["prior_auth_requests"]] == ["Q1"] == [r["request_id"] for r in state["requests"]]
    assert records_with(json.loads(json.dumps(state))).export()["requests"] == state["requests"]


def test_a_call_is_logged_with_the_lines_answers_and_voice_criteria_read_it() -> None:
    records = records_with({"phone_lines": [{"number": "+1 555 0200", "greeting": "Acme.",
                                             "answers": ["Reference PA-7781."]}]})
    records.place_call("+1 555 0200", ["MRI, CPT 72148"], patient_id="P1")
    state = records.export()
    said = VoiceTranscript.model_validate({"assert": "voice-transcript", "id": "v", "phrases": ["cpt 72148", "PA-7781"]})
    assert evaluate(state, said).result == "pass"
    only_agent = said.model_copy(update={"speaker": "agent"})
    assert (evaluate(state, only_agent).model_extra or {})["evidence"]["missing"] == ["PA-7781"]
    other = said.model_copy(update={"number": "+1 555 0999"})
    assert evaluate(state, other).justification == "no call in 'calls' with +1 555 0999"


def test_a_fax_keeps_its_attachments_and_fax_criteria_read_them() -> None:
    records = records_with({"inbox": [{"document_id": "D1", "title": "Referral", "content": "ICD-10 M54.5"}]})
    records.send_fax("+1 555 0300", "Cover for REQ-1", patient_id="P1", document_ids=["D1"])
    state = records.export()
    fax = FaxContent.model_validate({"assert": "outbound-fax", "id": "f", "contains": ["REQ-1", "m54.5"],
                                     "where": {"patient_id": "P1"}})
    assert evaluate(state, fax).result == "pass"
    assert evaluate(state, fax.model_copy(update={"where": {"patient_id": "P2"}})).result == "fail"
    with pytest.raises(KeyError):
        records.send_fax("+1 555 0300", document_ids=["D9"])


def test_the_records_env_names_its_new_trigger_actions() -> None:
    actions = set(RecordsEnv(VirtualClock()).trigger_actions())
    assert {"drop_file_inbox", "leave_voicemail", "post_hl7_message"} <= actions
    records = records_with({})
    records.leave_voicemail({"from": "+1 555 0100", "message": "Call me about Ana's MRI"},
                            datetime(2026, 1, 5, tzinfo=timezone.utc))
    [call] = records.export()["calls"]
    assert (call["direction"], call["status"], call["transcript"][0]["text"]) == \
        ("inbound", "voicemail", "Call me about Ana's MRI")



def test_a_posted_hl7_result_is_filed_with_its_patient_and_observations() -> None:
    records = records_with({})
    message = ("MSH|^~\\&|LAB|CLINIC|EHR|CLINIC|202601050900||ORU^R01|MSG1|P|2.5\r"
               "PID|1||P1^^^CLINIC||Diaz^Ana\r"
               "OBX|1|NM|2345-7^Glucose||182|mg/dL|70-99|H")
    doc = records.post_hl7({"message": message}, datetime(2026, 1, 5, 9, tzinfo=timezone.utc))
    assert (doc.kind, doc.title, doc.patient_id, doc.content) == ("hl7", "HL7 ORU^R01", "P1", "Glucose = 182 mg/dL")
