"""The records env's state: patients, referrals, requests and a document inbox, in memory."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from datetime import date, datetime
from typing import Any, Generic, Literal, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, Field

from prefect_agentenv.envs.records.base import Record
from prefect_agentenv.envs.records.comms import (
    Call,
    FaxAttachment,
    OutboundFax,
    PhoneLine,
    file_document,
    hl7_document,
    line_transcript,
    voicemail,
)
from prefect_agentenv.envs.server import VirtualClock
from prefect_agentenv.jsontypes import JsonArray, JsonObject
from prefect_agentenv.protocols.env import UtcDatetime
from prefect_agentenv.protocols.jsonrpc import JsonRpcFault

RequestStatus = Literal["draft", "received", "submitted", "pending_info", "approved", "denied", "cancelled"]
REQUEST_STATUSES: tuple[str, ...] = get_args(RequestStatus)


_Record = Record


class Patient(_Record):
    patient_id: str
    name: str
    birth_date: date | None = None
    sex: str | None = None
    mrn: str | None = None
    phone: str | None = None
    insurance: JsonObject | None = None


class Referral(_Record):
    referral_id: str
    patient_id: str
    received_at: UtcDatetime | None = None
    from_provider: str | None = None
    to_specialty: str | None = None
    reason: str = ""
    diagnosis_codes: list[str] = Field(default_factory=list)
    cpt_code: str | None = None
    status: str = "received"


class StatusChange(_Record):
    at: UtcDatetime
    status: str


class ServiceRequest(_Record):
    """A request about a patient (by default a prior authorization) moving through statuses."""

    request_id: str
    patient_id: str
    referral_id: str | None = None
    type: str = "prior_auth"
    status: RequestStatus = "received"
    cpt_code: str | None = None
    icd10_codes: list[str] = Field(default_factory=list)
    payer: str | None = None
    notes: str = ""
    created_at: UtcDatetime | None = None
    updated_at: UtcDatetime | None = None
    history: list[StatusChange] = Field(default_factory=list)
    """Every status the request has had, oldest first."""


class InboxDocument(_Record):
    """An inbound document (fax, letter, lab result) waiting to be read."""

    document_id: str
    kind: str = "fax"
    title: str = ""
    sender: str | None = None
    received_at: UtcDatetime | None = None
    content: str = ""
    patient_id: str | None = None
    referral_id: str | None = None
    read: bool = False


class RecordsSeed(BaseModel):
    """One ``data/add`` document; unknown resources are refused to catch typos."""

    model_config = ConfigDict(extra="forbid")

    patients: list[Patient] = Field(default_factory=list)
    referrals: list[Referral] = Field(default_factory=list)
    requests: list[ServiceRequest] = Field(default_factory=list)
    inbox: list[InboxDocument] = Field(default_factory=list)
    phone_lines: list[PhoneLine] = Field(default_factory=list)
    calls: list[Call] = Field(default_factory=list)
    outbound_faxes: list[OutboundFax] = Field(default_factory=list)
    prior_auth_requests: list[ServiceRequest] = Field(default_factory=list)
    """The prior-auth requests under Verial's name: the export's view of ``requests``. Loaded as
    requests (of type prior_auth) unless the same document lists them under ``requests``."""

    def merged_requests(self) -> list[ServiceRequest]:
        listed = {r.request_id for r in self.requests}
        return [*self.requests, *(r.model_copy(update={"type": "prior_auth"}) for r in self.prior_auth_requests
                                  if r.request_id not in listed)]


R = TypeVar("R", bound=_Record)


class Table(Generic[R]):
    """Records of one resource by key, in insertion order."""

    def __init__(self, resource: str, key: str, id_prefix: str) -> None:
        self.resource = resource
        self.key = key
        self._prefix = id_prefix
        self._rows: dict[str, R] = {}
        self._ids = itertools.count(1)

    def __iter__(self) -> Iterator[R]:
        return iter(list(self._rows.values()))

    def __contains__(self, key: object) -> bool:
        return key in self._rows

    def get(self, key: str) -> R:
        """Raises ``KeyError`` with a readable message when there is no such record."""
        try:
            return self._rows[key]
        except KeyError:
            raise KeyError(f"no {self.resource} record with {self.key} {key!r}") from None

    def put(self, record: R) -> R:
        self._rows[getattr(record, self.key)] = record
        return record

    def new_key(self) -> str:
        while (candidate := f"{self._prefix}-{next(self._ids):04d}") in self._rows:
            pass
        return candidate

    def clashes(self, incoming: Iterable[R]) -> list[str]:
        keys = [getattr(r, self.key) for r in incoming]
        return sorted({k for k in keys if k in self._rows or keys.count(k) > 1})

    def export(self) -> JsonArray:
        return [row.record() for row in self._rows.values()]


class Records:
    """The four resources and the operations the tools and triggers perform on them."""

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.reset()

    def reset(self) -> None:
        self.patients: Table[Patient] = Table("patients", "patient_id", "PAT")
        self.referrals: Table[Referral] = Table("referrals", "referral_id", "REF")
        self.requests: Table[ServiceRequest] = Table("requests", "request_id", "REQ")
        self.inbox: Table[InboxDocument] = Table("inbox", "document_id", "DOC")
        self.phone_lines: Table[PhoneLine] = Table("phone_lines", "number", "LINE")
        self.calls: Table[Call] = Table("calls", "call_id", "CALL")
        self.outbound_faxes: Table[OutboundFax] = Table("outbound_faxes", "fax_id", "FAX")

    def _tables(self) -> dict[str, Table[Any]]:
        return {t.resource: t for t in (self.patients, self.referrals, self.requests, self.inbox, self.phone_lines,
                                        self.calls, self.outbound_faxes)}

    def _incoming(self, seed: RecordsSeed, name: str) -> list[Any]:
        return seed.merged_requests() if name == "requests" else list(getattr(seed, name))

    def load(self, documents: Iterable[JsonObject]) -> None:
        """Validate every document, then add its records; a key already present is refused."""
        seeds = [RecordsSeed.model_validate(doc) for doc in documents]
        clashes = {name: table.clashes(r for seed in seeds for r in self._incoming(seed, name))
                   for name, table in self._tables().items()}
        clashes = {name: keys for name, keys in clashes.items() if keys}
        if clashes:
            raise JsonRpcFault.env_error("duplicate_id", f"records already present: {clashes}", ids=clashes)
        now = self.clock.now()
        for seed in seeds:
            for patient in seed.patients:
                self.patients.put(patient)
            for referral in seed.referrals:
                self.referrals.put(referral.model_copy(update={"received_at": referral.received_at or now}))
            for request in seed.merged_requests():
                self.requests.put(_stamped(request, now))
            for document in seed.inbox:
                self.inbox.put(document.model_copy(update={"received_at": document.received_at or now}))
            for line in seed.phone_lines:
                self.phone_lines.put(line)
            for call in seed.calls:
                self.calls.put(call)
            for fax in seed.outbound_faxes:
                self.outbound_faxes.put(fax)

    def export(self) -> JsonObject:
        """Every resource, and ``prior_auth_requests`` (the prior-auth requests) — the shape ``load`` accepts."""
        tables = {name: table.export() for name, table in self._tables().items()}
        prior_auth: JsonArray = [r for r in tables["requests"] if isinstance(r, dict) and r.get("type") == "prior_auth"]
        return {**tables, "prior_auth_requests": prior_auth}

    def search_patients(self, query: str = "", birth_date: date | None = None) -> list[Patient]:
        """Patients whose name, MRN or id contains every word of ``query``, optionally by birth date."""
        terms = query.lower().split()
        return [p for p in self.patients
                if (birth_date is None or p.birth_date == birth_date)
                and all(t in " ".join(filter(None, [p.name, p.mrn, p.patient_id])).lower() for t in terms)]

    def read_document(self, document_id: str) -> InboxDocument:
        return self.inbox.put(self.inbox.get(document_id).model_copy(update={"read": True}))

    def drop_document(self, data: JsonObject, at: datetime) -> InboxDocument:
        """File an inbound document (trigger action); ``document_id`` defaults to ``DOC-NNNN``."""
        document = InboxDocument.model_validate({"document_id": self.inbox.new_key(), **data})
        if document.document_id in self.inbox:
            raise ValueError(f"inbox document {document.document_id!r} already present")
        return self.inbox.put(document.model_copy(update={"received_at": document.received_at or at}))

    def drop_file(self, data: JsonObject, at: datetime) -> InboxDocument:
        """File a dropped inbound file as an inbox document (trigger action ``drop_file_inbox``)."""
        return self.drop_document(file_document(data, self.inbox.new_key()), at)

    def post_hl7(self, data: JsonObject, at: datetime) -> InboxDocument:
        """File a posted HL7 message (an ORU^R01 result, say) in the inbox (trigger ``post_hl7_message``)."""
        return self.drop_document(hl7_document(data, self.inbox.new_key()), at)

    def leave_voicemail(self, data: JsonObject, at: datetime) -> Call:
        """Log a voicemail left on the clinic's line (trigger action ``leave_voicemail``)."""
        return self.calls.put(voicemail(data, self.calls.new_key(), at))

    def place_call(self, number: str, utterances: list[str], patient_id: str | None = None) -> Call:
        """Call a line and say each utterance; the exchange is logged with its transcript."""
        line = self.phone_lines.get(number) if number in self.phone_lines else None
        call = Call(call_id=self.calls.new_key(), number=number, started_at=self.clock.now(), patient_id=patient_id,
                    transcript=line_transcript(line, number, utterances))
        return self.calls.put(call)

    def send_fax(self, to: str, content: str = "", title: str = "", patient_id: str | None = None,
                 document_ids: list[str] | None = None) -> OutboundFax:
        """Queue a fax with a cover text and copies of inbox documents; raises ``KeyError`` for an unknown one."""
        attachments = [FaxAttachment(document_id=d.document_id, title=d.title, content=d.content)
                       for d in (self.inbox.get(i) for i in document_ids or [])]
        fax = OutboundFax(fax_id=self.outbound_faxes.new_key(), to=to, title=title, content=content,
                          patient_id=patient_id, attachments=attachments, sent_at=self.clock.now())
        return self.outbound_faxes.put(fax)

    def create_request(self, patient_id: str, **fields: Any) -> ServiceRequest:
        """A new request for a patient; raises ``KeyError`` for an unknown patient or referral."""
        self.patients.get(patient_id)
        referral_id = fields.get("referral_id")
        if referral_id is not None and self.referrals.get(referral_id).patient_id != patient_id:
            raise ValueError(f"referral {referral_id!r} is not about patient {patient_id!r}")
        request = ServiceRequest.model_validate(
            {"request_id": self.requests.new_key(), "patient_id": patient_id,
             **{k: v for k, v in fields.items() if v is not None}})
        return self.requests.put(_stamped(request, self.clock.now()))

    def update_request(self, request_id: str, **changes: Any) -> ServiceRequest:
        """Change a request's fields (``None`` leaves one as is); status changes go to history."""
        current = self.requests.get(request_id)
        given = {k: v for k, v in changes.items() if v is not None}
        updated = ServiceRequest.model_validate({**current.model_dump(), **given})
        now = self.clock.now()
        history = list(current.history)
        if updated.status != current.status:
            history.append(StatusChange(at=now, status=updated.status))
        return self.requests.put(updated.model_copy(update={"updated_at": now, "history": history}))


def _stamped(request: ServiceRequest, now: datetime) -> ServiceRequest:
    """Fill creation times and start the history with the current status."""
    created = request.created_at or now
    history = request.history or [StatusChange(at=created, status=request.status)]
    return request.model_copy(update={"created_at": created, "updated_at": request.updated_at or created,
                                      "history": history})
