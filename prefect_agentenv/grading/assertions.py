"""Typed assertions against an env's exported state, each row keeping its evidence.

The state is what ``data/get`` exports: ``{resource: [records]}`` (for example
``{"requests": [{"request_id": "r1", "status": "submitted"}]}``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, NotRequired, TypedDict

from pydantic import BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, Tag

from prefect_agentenv.attribute_docs import attribute_docstrings
from prefect_agentenv.context import VerificationRow
from prefect_agentenv.jsontypes import JsonArray, JsonObject, JsonValue

ASSERT_ALIASES = {
    "portal_state_match": "state_match", "resource_state_match": "state_match", "fhir_resource_state": "state_match",
    "voice_transcript_contains": "voice_transcript", "voice_transcript_phrases": "voice_transcript",
    "transcript_contains": "voice_transcript",
    "outbound_fax": "fax_content", "outbound_fax_content": "fax_content", "fax_content_match": "fax_content",
}
"""Other spellings of assertion kinds: Verial writes them hyphenated and names what they read
(``portal-state-match`` is a state_match against the portal's rows)."""


def canonical_assert(value: Any) -> Any:
    """``portal-state-match`` -> ``state_match``: hyphens become underscores, aliases their kind."""
    if not isinstance(value, str):
        return value
    name = value.strip().lower().replace("-", "_")
    return ASSERT_ALIASES.get(name, name)


def assert_kind(value: Any) -> str | None:
    """The canonical ``assert`` of a raw assertion (or of a model), for discriminated unions."""
    if isinstance(value, BaseModel):
        return getattr(value, "assert_", None)
    if isinstance(value, dict):
        return canonical_assert(value.get("assert"))
    return None


CANONICAL_ASSERT = BeforeValidator(canonical_assert)
"""On an assertion model's ``assert`` field: every spelling of its kind is accepted."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=attribute_docstrings)


class CorrelateBy(_Strict):
    """Which record of which resource an assertion is about."""

    resource: str
    """Resource (collection) name in the exported state, e.g. referrals."""
    key: str
    """Field identifying the record, e.g. request_id."""
    value: Any = None
    """The key's value; when omitted every record of the resource must match."""


class PathAssertion(_Strict):
    """A field of the correlated record."""

    path: str
    """Dotted path inside the record."""
    expected: Any = None
    not_expected: Any = None
    exists: bool | None = None


class _Labelled(_Strict):
    """What every assertion row may carry for people and per-axis reports."""

    label: str | None = None
    """Human-readable title of the check, copied onto its row."""
    axis: str | None = None
    """Reporting axis (correctness, communication…), copied onto its row for per-axis scores."""


class StateMatch(_Labelled):
    assert_: Annotated[Literal["state_match"], CANONICAL_ASSERT] = Field(alias="assert")
    id: str
    correlate_by: CorrelateBy
    assertions: list[PathAssertion] = Field(min_length=1)
    weight: float = 1.0


class RecordCount(_Labelled):
    assert_: Annotated[Literal["record_count"], CANONICAL_ASSERT] = Field(alias="assert")
    id: str
    resource: str
    where: dict[str, Any] = Field(default_factory=dict)
    """Only records whose fields equal these values are counted."""
    equals: int | None = None
    at_least: int | None = None
    at_most: int | None = None
    weight: float = 1.0


class FilePresent(_Labelled):
    assert_: Annotated[Literal["file_present"], CANONICAL_ASSERT] = Field(alias="assert")
    id: str
    resource: str = "files"
    name: str
    """File name expected in the env's exported files."""
    contains: str | None = None
    weight: float = 1.0


class VoiceTranscript(_Labelled):
    """A phone call's transcript says every phrase (voice interface outcomes)."""

    assert_: Annotated[Literal["voice_transcript"], CANONICAL_ASSERT] = Field(alias="assert")
    id: str
    phrases: list[str] = Field(min_length=1)
    """Phrases that must all be said in one call (case and spacing forgiven)."""
    number: str | None = None
    """Only calls with this number (the line called or calling); any call when omitted."""
    speaker: str | None = None
    """Only what this speaker said (``agent`` or ``line``); the whole transcript when omitted."""
    where: dict[str, Any] = Field(default_factory=dict)
    """Only calls whose fields equal these values (e.g. ``{patient_id: P1}``)."""
    resource: str = "calls"
    weight: float = 1.0


class FaxContent(_Labelled):
    """An outbound fax carries every phrase (fax interface outcomes)."""

    assert_: Annotated[Literal["fax_content"], CANONICAL_ASSERT] = Field(alias="assert")
    id: str
    contains: list[str] = Field(min_length=1)
    """Phrases that must all appear in one fax (its title, cover text or attached documents)."""
    to: str | None = None
    """Only faxes sent to this number; any fax when omitted."""
    where: dict[str, Any] = Field(default_factory=dict)
    """Only faxes whose fields equal these values (e.g. ``{patient_id: P1}``)."""
    resource: str = "outbound_faxes"
    weight: float = 1.0


AnyStateAssertion = StateMatch | RecordCount | FilePresent | VoiceTranscript | FaxContent
StateAssertion = Annotated[
    Annotated[StateMatch, Tag("state_match")] | Annotated[RecordCount, Tag("record_count")]
    | Annotated[FilePresent, Tag("file_present")] | Annotated[VoiceTranscript, Tag("voice_transcript")]
    | Annotated[FaxContent, Tag("fax_content")],
    Discriminator(assert_kind),
]


class AssertionRow(TypedDict):
    """One assertion's row as it is built, its members in the order the report writes them
    (:func:`evaluate` hands it on as a :class:`~prefect_agentenv.context.VerificationRow`)."""

    id: str
    result: Literal["pass", "fail"]
    score: float
    weight: float
    justification: str
    evidence: JsonObject
    """What was compared: the record's actual values next to the expected ones."""
    label: NotRequired[str]
    axis: NotRequired[str]


_MISSING = object()


def get_path(record: JsonValue, path: str) -> Any:
    """Follow a dotted path (``a.b.0.c``) into dicts and lists; ``_MISSING`` when absent."""
    current = record
    for part in path.split("."):
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.lstrip("-").isdigit() and -len(current) <= int(part) < len(current):
            current = current[int(part)]
        else:
            return _MISSING
    return current


def _records(state: JsonObject, resource: str) -> JsonArray:
    value = state.get(resource, [])
    return value if isinstance(value, list) else [value]


def _row(assertion_id: str, passed: bool, weight: float, justification: str, evidence: JsonObject) -> AssertionRow:
    return {"id": assertion_id, "result": "pass" if passed else "fail", "score": 1.0 if passed else 0.0,
            "weight": weight, "justification": justification, "evidence": evidence}


def _check_path(record: JsonValue, check: PathAssertion) -> tuple[bool, JsonObject]:
    actual = get_path(record, check.path)
    shown = None if actual is _MISSING else actual
    evidence: JsonObject = {"path": check.path, "actual": shown, "present": actual is not _MISSING}
    ok = True
    if check.exists is not None:
        evidence["exists"] = check.exists
        ok &= (actual is not _MISSING) == check.exists
    if "expected" in check.model_fields_set:
        evidence["expected"] = check.expected
        ok &= actual is not _MISSING and _equal(actual, check.expected)
    if "not_expected" in check.model_fields_set:
        evidence["not_expected"] = check.not_expected
        ok &= actual is _MISSING or not _equal(actual, check.not_expected)
    return ok, evidence


def _equal(actual: Any, expected: Any) -> bool:
    """Equality that forgives number/string spelling ("72148" == 72148) and case of strings."""
    if isinstance(actual, str) and isinstance(expected, str):
        return actual.strip().casefold() == expected.strip().casefold()
    if isinstance(actual, bool) or isinstance(expected, bool):
        return actual == expected
    if isinstance(actual, int | float | str) and isinstance(expected, int | float | str):
        return str(actual).strip() == str(expected).strip()
    return bool(actual == expected)


def state_match(state: JsonObject, a: StateMatch) -> AssertionRow:
    """The correlated record(s) must satisfy every path assertion."""
    corr = a.correlate_by
    records = [r for r in _records(state, corr.resource)
               if corr.value is None or _equal(get_path(r, corr.key), corr.value)]
    base: JsonObject = {"resource": corr.resource, "key": corr.key, "value": corr.value, "matched_records": len(records)}
    if not records:
        return _row(a.id, False, a.weight, f"no record in '{corr.resource}' with {corr.key} = {corr.value!r}",
                    {**base, "checks": []})
    checks: JsonArray = []
    failures: list[str] = []
    for record in records:
        for check in a.assertions:
            ok, evidence = _check_path(record, check)
            evidence["record"] = get_path(record, corr.key) if get_path(record, corr.key) is not _MISSING else None
            checks.append({**evidence, "ok": ok})
            if not ok:
                failures.append(f"{check.path}: expected {evidence.get('expected', evidence.get('not_expected'))!r}, "
                                f"got {evidence['actual']!r}")
    why = "all checks hold" if not failures else "; ".join(failures[:5])
    return _row(a.id, not failures, a.weight, why, {**base, "checks": checks})


def record_count(state: JsonObject, a: RecordCount) -> AssertionRow:
    """How many records (matching ``where``) a resource holds."""
    count = sum(1 for r in _records(state, a.resource)
                if all(_equal(get_path(r, k), v) for k, v in a.where.items()))
    ok = ((a.equals is None or count == a.equals) and (a.at_least is None or count >= a.at_least)
          and (a.at_most is None or count <= a.at_most))
    expected: JsonObject = {k: v for k, v in (("equals", a.equals), ("at_least", a.at_least), ("at_most", a.at_most))
                if v is not None}
    return _row(a.id, ok, a.weight, f"{count} record(s) in '{a.resource}' matching {a.where or 'anything'}",
                {"resource": a.resource, "where": a.where, "actual": count, "expected": expected})


def file_present(state: JsonObject, a: FilePresent) -> AssertionRow:
    """A file of that name is among the exported files (and contains the text, if given)."""
    files = [f for f in _records(state, a.resource)
             if isinstance(f, dict) and (f.get("name") == a.name or f.get("filename") == a.name)]
    found = bool(files)
    contains_ok = True
    if found and a.contains is not None:
        text = str(files[0].get("content") or files[0].get("text") or files[0].get("body") or "")
        contains_ok = a.contains in text
    ok = found and contains_ok
    why = (f"'{a.name}' present" if found else f"'{a.name}' not among {len(_records(state, a.resource))} file(s)")
    if found and a.contains is not None:
        why += "" if contains_ok else f" but does not contain {a.contains!r}"
    return _row(a.id, ok, a.weight, why, {"resource": a.resource, "name": a.name, "present": found,
                                          "contains": a.contains})


def _normal(text: str) -> str:
    return " ".join(text.casefold().split())


def _phrases_in(records: list[JsonObject], phrases: list[str],
                text_of: Callable[[JsonObject], str]) -> tuple[JsonObject | None, list[str]]:
    """The first record whose text has every phrase, else the record missing the fewest (and what it misses)."""
    best: tuple[JsonObject | None, list[str]] = (None, list(phrases))
    for record in records:
        text = _normal(text_of(record))
        missing = [p for p in phrases if _normal(p) not in text]
        if not missing:
            return record, []
        if len(missing) < len(best[1]):
            best = (record, missing)
    return best


def _where(records: JsonArray, where: dict[str, Any], **fields: Any) -> list[JsonObject]:
    wanted = {**where, **{k: v for k, v in fields.items() if v is not None}}
    return [r for r in records if isinstance(r, dict) and all(_equal(get_path(r, k), v) for k, v in wanted.items())]


def voice_transcript(state: JsonObject, a: VoiceTranscript) -> AssertionRow:
    """One call (of the number, matching ``where``) whose transcript says every phrase."""
    calls = [c for c in _where(_records(state, a.resource), a.where)
             if a.number is None or _equal(c.get("number"), a.number)]

    def said(call: JsonObject) -> str:
        turns = call.get("transcript") or []
        if isinstance(turns, str):
            return turns
        if not isinstance(turns, list):
            return ""
        return " \n".join(str(t.get("text", "")) for t in turns
                          if isinstance(t, dict) and (a.speaker is None or _equal(t.get("speaker"), a.speaker)))

    call, missing = _phrases_in(calls, a.phrases, said)
    evidence: JsonObject = {"resource": a.resource, "number": a.number, "speaker": a.speaker, "calls": len(calls),
                "call_id": call.get("call_id") if call is not None else None, "missing": list(missing)}
    if not calls:
        return _row(a.id, False, a.weight, f"no call in '{a.resource}'" + (f" with {a.number}" if a.number else ""),
                    evidence)
    why = "every phrase was said" if not missing else f"not said: {', '.join(repr(m) for m in missing)}"
    return _row(a.id, not missing, a.weight, why, evidence)


def fax_content(state: JsonObject, a: FaxContent) -> AssertionRow:
    """One outbound fax (to the number, matching ``where``) carrying every phrase."""
    faxes = [f for f in _where(_records(state, a.resource), a.where) if a.to is None or _equal(f.get("to"), a.to)]

    def text(fax: JsonObject) -> str:
        attachments = fax.get("attachments")
        attached = [str(d.get("content", "")) + " " + str(d.get("title", ""))
                    for d in (attachments if isinstance(attachments, list) else []) if isinstance(d, dict)]
        return " \n".join([str(fax.get("title", "")), str(fax.get("content", "")), *attached])

    fax, missing = _phrases_in(faxes, a.contains, text)
    evidence: JsonObject = {"resource": a.resource, "to": a.to, "faxes": len(faxes),
                "fax_id": fax.get("fax_id") if fax is not None else None, "missing": list(missing)}
    if not faxes:
        return _row(a.id, False, a.weight, f"no outbound fax in '{a.resource}'" + (f" to {a.to}" if a.to else ""),
                    evidence)
    why = "the fax carries every phrase" if not missing else f"missing: {', '.join(repr(m) for m in missing)}"
    return _row(a.id, not missing, a.weight, why, evidence)


def evaluate(state: JsonObject, assertion: AnyStateAssertion) -> VerificationRow:
    """One row for one assertion, with its label and axis when it has them."""
    if isinstance(assertion, StateMatch):
        row = state_match(state, assertion)
    elif isinstance(assertion, RecordCount):
        row = record_count(state, assertion)
    elif isinstance(assertion, VoiceTranscript):
        row = voice_transcript(state, assertion)
    elif isinstance(assertion, FaxContent):
        row = fax_content(state, assertion)
    else:
        row = file_present(state, assertion)
    if assertion.label is not None:
        row["label"] = assertion.label
    if assertion.axis is not None:
        row["axis"] = assertion.axis
    return VerificationRow.model_validate(row)
