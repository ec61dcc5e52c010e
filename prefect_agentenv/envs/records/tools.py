"""The records env's MCP tools. Each returns an object, so clients get structured content.

Each tool's return annotation (a ``dict`` of ``str`` to ``Any``) is what MCP advertises as its output
schema (``{"type": "object", "additionalProperties": true}``); a narrower annotation would change
the ``tools/list`` every client sees. The records inside are typed (:meth:`Record.record`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from prefect_agentenv.envs.records.store import REQUEST_STATUSES, Records


@contextmanager
def _tool_errors() -> Iterator[None]:
    """Unknown ids and invalid values are the agent's mistakes: report them as tool errors."""
    try:
        yield
    except KeyError as exc:
        raise ToolError(str(exc.args[0])) from None
    except ValueError as exc:
        raise ToolError(str(exc)) from None


def register_tools(mcp: MCPServer, records: Records) -> None:
    """Add the patient, referral, inbox and request tools."""
    for tool in (*_lookup_tools(records), *_request_tools(records), *_comms_tools(records)):
        mcp.tool()(tool)


def _lookup_tools(records: Records) -> list[Callable[..., Any]]:
    async def search_patients(query: str = "", birth_date: date | None = None) -> dict[str, Any]:
        """Find patients whose name, MRN or id contains every word of the query; optionally
        only those born on birth_date (YYYY-MM-DD). An empty query lists every patient."""
        return {"patients": [p.record() for p in records.search_patients(query, birth_date)]}

    async def get_patient(patient_id: str) -> dict[str, Any]:
        """One patient's record by patient_id."""
        with _tool_errors():
            return records.patients.get(patient_id).record()

    async def list_referrals(patient_id: str | None = None, status: str | None = None) -> dict[str, Any]:
        """Referrals, optionally only one patient's and/or only those with a status."""
        return {"referrals": [r.record() for r in records.referrals
                              if patient_id in (None, r.patient_id) and status in (None, r.status)]}

    async def read_referral(referral_id: str) -> dict[str, Any]:
        """One referral in full by referral_id."""
        with _tool_errors():
            return records.referrals.get(referral_id).record()

    async def list_inbox(unread_only: bool = False) -> dict[str, Any]:
        """Inbound documents (faxes, letters…), without their content; newest first."""
        documents = sorted(records.inbox, key=lambda d: d.received_at or records.clock.now(), reverse=True)
        return {"documents": [{k: v for k, v in d.record().items() if k != "content"}
                              for d in documents if not (unread_only and d.read)]}

    async def read_inbox_document(document_id: str) -> dict[str, Any]:
        """One inbound document in full by document_id, and mark it read."""
        with _tool_errors():
            return records.read_document(document_id).record()

    return [search_patients, get_patient, list_referrals, read_referral, list_inbox, read_inbox_document]


def _request_tools(records: Records) -> list[Callable[..., Any]]:
    statuses = ", ".join(REQUEST_STATUSES)

    async def list_requests(patient_id: str | None = None, status: str | None = None) -> dict[str, Any]:
        """Requests (e.g. prior authorizations), optionally one patient's and/or by status."""
        return {"requests": [r.record() for r in records.requests
                             if patient_id in (None, r.patient_id) and status in (None, r.status)]}

    async def get_request(request_id: str) -> dict[str, Any]:
        """One request in full by request_id, with its status history."""
        with _tool_errors():
            return records.requests.get(request_id).record()

    async def create_request(patient_id: str, cpt_code: str | None = None, icd10_codes: list[str] | None = None,
                             referral_id: str | None = None, type: str = "prior_auth",  # noqa: A002
                             payer: str | None = None, notes: str | None = None,
                             status: str = "draft") -> dict[str, Any]:
        """Create a request for a patient (by default a prior authorization, status draft)."""
        with _tool_errors():
            return records.create_request(patient_id, cpt_code=cpt_code, icd10_codes=icd10_codes,
                                          referral_id=referral_id, type=type, payer=payer, notes=notes,
                                          status=status).record()

    async def update_request(request_id: str, status: str | None = None, cpt_code: str | None = None,
                             icd10_codes: list[str] | None = None, payer: str | None = None,
                             notes: str | None = None) -> dict[str, Any]:
        """Change a request's status, codes, payer or notes; omitted fields stay as they are."""
        with _tool_errors():
            return records.update_request(request_id, status=status, cpt_code=cpt_code, icd10_codes=icd10_codes,
                                          payer=payer, notes=notes).record()

    create_request.__doc__ = f"{create_request.__doc__} Statuses: {statuses}."
    update_request.__doc__ = f"{update_request.__doc__} Statuses: {statuses}."
    return [list_requests, get_request, create_request, update_request]


def _comms_tools(records: Records) -> list[Callable[..., Any]]:
    async def place_call(number: str, say: list[str], patient_id: str | None = None) -> dict[str, Any]:
        """Call a phone number (a payer's line, say) and say each utterance in turn; returns the
        call with its transcript, the line's answers included."""
        return records.place_call(number, say, patient_id).record()

    async def list_calls(number: str | None = None) -> dict[str, Any]:
        """The call log (calls placed and voicemails left), optionally one number's, with transcripts."""
        return {"calls": [c.record() for c in records.calls if number in (None, c.number)]}

    async def send_fax(to: str, content: str = "", title: str = "", patient_id: str | None = None,
                       document_ids: list[str] | None = None) -> dict[str, Any]:
        """Fax a cover text to a number, attaching inbox documents by document_id."""
        with _tool_errors():
            return records.send_fax(to, content, title, patient_id, document_ids).record()

    async def list_outbound_faxes() -> dict[str, Any]:
        """Faxes sent so far, with their cover text and attachments."""
        return {"faxes": [f.record() for f in records.outbound_faxes]}

    return [place_call, list_calls, send_fax, list_outbound_faxes]
