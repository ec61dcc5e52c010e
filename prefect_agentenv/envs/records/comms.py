"""The records env's voice and fax interfaces: phone lines, a call log with transcripts, and an
outbound fax queue.

A call is simulated, not spoken: the agent dials a line and says its utterances; the line
answers each from its seeded ``answers`` (in order, then ``Thank you.``), and the whole
exchange is kept as the call's transcript. A fax is queued with its cover text and the inbox
documents it attaches (copied, so the fax keeps what was sent).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from prefect_agentenv.envs.records.base import Record
from prefect_agentenv.jsontypes import JsonObject, JsonValue
from prefect_agentenv.protocols.env import UtcDatetime


class PhoneLine(Record):
    """A number the agent can call (a payer's IVR, a clinic's front desk)."""

    number: str
    name: str = ""
    greeting: str = ""
    """What the line says when it answers."""
    answers: list[str] = Field(default_factory=list)
    """Its answers to the caller's utterances, in order."""


class TranscriptTurn(Record):
    speaker: str
    """``agent`` (the caller under test) or ``line`` (the other end)."""
    text: str


class Call(Record):
    """A phone call, outbound (the agent called) or inbound (a voicemail left on the clinic's line)."""

    call_id: str
    number: str
    direction: str = "outbound"
    status: str = "completed"
    """``completed`` for a call, ``voicemail`` for a message left."""
    started_at: UtcDatetime | None = None
    patient_id: str | None = None
    transcript: list[TranscriptTurn] = Field(default_factory=list)


class FaxAttachment(Record):
    document_id: str
    title: str = ""
    content: str = ""


class OutboundFax(Record):
    """A fax the agent sent."""

    fax_id: str
    to: str
    title: str = ""
    content: str = ""
    """The cover text."""
    patient_id: str | None = None
    attachments: list[FaxAttachment] = Field(default_factory=list)
    status: str = "sent"
    sent_at: UtcDatetime | None = None


def line_transcript(line: PhoneLine | None, number: str, utterances: list[str]) -> list[TranscriptTurn]:
    """The exchange of one call: the line's greeting, then each utterance and the line's answer."""
    turns = [TranscriptTurn(speaker="line", text=(line.greeting if line and line.greeting
                                                   else f"You have reached {number}."))]
    answers = list(line.answers) if line else []
    for said in utterances:
        turns.append(TranscriptTurn(speaker="agent", text=said))
        turns.append(TranscriptTurn(speaker="line", text=answers.pop(0) if answers else "Thank you."))
    return turns


_DOCUMENT_FIELDS = ("document_id", "kind", "title", "sender", "content", "file_name", "inbound_path")


def file_document(data: JsonObject, document_id: str) -> JsonObject:
    """An inbox document for a file dropped in the inbound folder (``drop_file_inbox``); the
    caller dates it (``received_at`` is the trigger's instant, whatever ``data`` says).

    ``data`` holds the file's own members (``file_name``, ``title``, ``content``, ``kind``…) and the
    record it is about (a referral's fields, say); without ``content`` the file's text lists them.
    """
    about = {k: v for k, v in data.items() if k not in _DOCUMENT_FIELDS}
    folder = str(data.get("inbound_path") or "inbox/").strip("/")
    name = data.get("file_name") or f"{data.get('document_id') or document_id}.txt"
    title = data.get("title") or (f"Referral {about['referral_id']}" if about.get("referral_id") else str(name))
    content = data.get("content") or "\n".join(f"{k.replace('_', ' ')}: {_text(v)}" for k, v in about.items())
    undated = {k: v for k, v in about.items() if k != "received_at"}
    return {**undated, "document_id": data.get("document_id") or document_id, "kind": data.get("kind") or "fax",
            "title": title, "sender": data.get("sender"), "content": content, "path": f"{folder}/{name}"}


def _text(value: JsonValue) -> str:
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def voicemail(data: JsonObject, call_id: str, at: datetime) -> Call:
    """A message left on the clinic's line (``leave_voicemail``): ``{from, message, patient_id?}``."""
    message = str(data.get("message") or data.get("text") or "")
    number = str(data.get("from") or data.get("number") or "unknown")
    extra = {k: v for k, v in data.items() if k not in ("from", "number", "message", "text")}
    return Call.model_validate({**extra, "call_id": data.get("call_id") or call_id, "number": number,
                                "direction": "inbound", "status": "voicemail", "started_at": at,
                                "transcript": [{"speaker": "caller", "text": message}]})


def hl7_document(data: JsonObject, document_id: str) -> JsonObject:
    """An inbox document for a posted HL7 v2 message (``post_hl7_message``), e.g. an ORU^R01 result;
    the caller dates it with the trigger's instant.

    ``data`` is ``{message, patient_id?}``; the message type (MSH-9), the patient (PID-3, unless
    ``patient_id`` is given) and the observations (OBX-3 = OBX-5 OBX-6) are read from its segments.
    """
    message = str(data.get("message") or "")
    segments = [line.split("|") for line in message.replace("\r", "\n").splitlines() if line.strip()]
    fields = {seg[0]: seg for seg in segments}
    kind = fields.get("MSH", [])[8] if len(fields.get("MSH", [])) > 8 else "HL7"
    pid = fields.get("PID", [])
    patient = data.get("patient_id") or (pid[3].split("^")[0] if len(pid) > 3 and pid[3] else None)
    results = [f"{s[3].split('^')[-1] or s[3]} = {s[5]} {s[6] if len(s) > 6 else ''}".strip()
               for s in segments if s[0] == "OBX" and len(s) > 5]
    extra = {k: v for k, v in data.items() if k not in ("message", "patient_id", "received_at")}
    return {**extra, "document_id": data.get("document_id") or document_id, "kind": "hl7",
            "title": f"HL7 {kind}", "sender": data.get("sender"), "patient_id": patient,
            "content": "\n".join(results) or message, "hl7": message}
