"""The ``records`` reference env: a clinic's patients, referrals, requests and document inbox.

Serve it with ``python -m prefect_agentenv.envs.records --host 127.0.0.1 --port 8123``.

Seed (``data/add``): each part is a data part — or a JSON file/text part — holding any of::

    {
      "patients":  [{"patient_id": "P1", "name": "Ana Diaz", "birth_date": "1965-03-15",
                     "sex": "F", "mrn": "MRN-001", "phone": "...",
                     "insurance": {"payer": "Acme Health", "member_id": "A123"}}],
      "referrals": [{"referral_id": "R1", "patient_id": "P1", "received_at": "2026-03-02T08:00:00Z",
                     "from_provider": "Dr. Lee", "to_specialty": "radiology",
                     "reason": "low back pain", "diagnosis_codes": ["M54.5"],
                     "cpt_code": "72148", "status": "received"}],
      "requests":  [{"request_id": "REQ-0001", "patient_id": "P1", "referral_id": "R1",
                     "type": "prior_auth", "status": "received", "cpt_code": "72148",
                     "icd10_codes": ["M54.5"], "payer": "Acme Health", "notes": "",
                     "created_at": ..., "updated_at": ..., "history": [{"at", "status"}]}],
      "inbox":     [{"document_id": "DOC-0001", "kind": "fax", "title": "Referral",
                     "sender": "+1 555 0100", "received_at": ..., "content": "...",
                     "patient_id": "P1", "referral_id": "R1", "read": false}],
      "phone_lines": [{"number": "+1 555 0200", "name": "...", "greeting": "...", "answers": ["..."]}],
      "calls":     [{"call_id": "CALL-0001", "number": ..., "direction": "outbound" | "inbound",
                     "status": "completed" | "voicemail", "patient_id": ..., "started_at": ...,
                     "transcript": [{"speaker": "line" | "agent" | "caller", "text": "..."}]}],
      "outbound_faxes": [{"fax_id": "FAX-0001", "to": ..., "title": ..., "content": ...,
                     "patient_id": ..., "attachments": [{"document_id", "title", "content"}],
                     "status": "sent", "sent_at": ...}],
      "prior_auth_requests": [...]   # requests of type prior_auth (Verial's name for them)
    }

Only the keys (``patient_id``, ``referral_id``, ``request_id``, ``document_id``) and a
patient's ``name`` / a record's ``patient_id`` are required; times default to the clock's
now; other members are kept as given. Request statuses: draft, received, submitted,
pending_info, approved, denied, cancelled. Unknown resources and keys already present are
refused (-32602 / -32000 ``duplicate_id``).

Export (``data/get``): one data part with every resource above — the seed's shape, so a
snapshot loads back (``prior_auth_requests`` is a view of ``requests``: on load its rows are
skipped when the same document lists them under ``requests``, else added as prior-auth requests). Typed state
assertions correlate on it, e.g. resource ``requests``, key ``request_id``, paths
``status`` and ``cpt_code``.

MCP tools: ``search_patients(query="", birth_date=None)``, ``get_patient(patient_id)``,
``list_referrals(patient_id=None, status=None)``, ``read_referral(referral_id)``,
``list_inbox(unread_only=False)``, ``read_inbox_document(document_id)`` (marks it read),
``list_requests(patient_id=None, status=None)``, ``get_request(request_id)``,
``create_request(patient_id, cpt_code=None, icd10_codes=None, referral_id=None,
type="prior_auth", payer=None, notes=None, status="draft")``, ``update_request(request_id,
status=None, cpt_code=None, icd10_codes=None, payer=None, notes=None)``,
``place_call(number, say, patient_id=None)`` (the line answers each utterance from its seeded
``answers``, then "Thank you."), ``list_calls(number=None)``, ``send_fax(to, content="",
title="", patient_id=None, document_ids=None)`` (attaches copies of inbox documents),
``list_outbound_faxes()``. Created requests get ids ``REQ-NNNN``; every status change is
appended to the request's ``history``.

Trigger action ``drop_inbox_document``: ``{"at": ISO time, "action": "drop_inbox_document",
"data": <inbox document>}`` files the document (``document_id`` defaults to ``DOC-NNNN``,
``received_at`` to ``at``) once the clock reaches ``at``. ``drop_file_inbox`` files a dropped
file: ``data`` is the record it is about plus ``inbound_path`` (default ``inbox/``) and optional
``file_name``, ``title``, ``content``, ``kind``; the document's ``path`` is
``<inbound_path>/<file_name or document_id.txt>`` and its text lists the record's fields unless
``content`` is given. ``leave_voicemail`` (``from``, ``message``, ``patient_id``) logs an
inbound call with status ``voicemail``. ``post_hl7_message`` (``message``: HL7 v2 text, e.g. an
ORU^R01 result) files an inbox document of kind ``hl7`` whose patient comes from PID-3 and whose
content lists the OBX observations.
"""

from prefect_agentenv.envs.records.env import RecordsEnv

__all__ = ["RecordsEnv"]
