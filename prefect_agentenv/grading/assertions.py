"""Typed assertions against an env's exported state, each row keeping its evidence.

The state is what ``data/get`` exports: ``{resource: [records]}`` (for example
``{"requests": [{"request_id": "r1", "status": "submitted"}]}``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


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
    assert_: Literal["state_match"] = Field(alias="assert")
    id: str
    correlate_by: CorrelateBy
    assertions: list[PathAssertion] = Field(min_length=1)
    weight: float = 1.0


class RecordCount(_Labelled):
    assert_: Literal["record_count"] = Field(alias="assert")
    id: str
    resource: str
    where: dict[str, Any] = Field(default_factory=dict)
    """Only records whose fields equal these values are counted."""
    equals: int | None = None
    at_least: int | None = None
    at_most: int | None = None
    weight: float = 1.0


class FilePresent(_Labelled):
    assert_: Literal["file_present"] = Field(alias="assert")
    id: str
    resource: str = "files"
    name: str
    """File name expected in the env's exported files."""
    contains: str | None = None
    weight: float = 1.0


StateAssertion = Annotated[StateMatch | RecordCount | FilePresent, Field(discriminator="assert_")]


_MISSING = object()


def get_path(record: Any, path: str) -> Any:
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


def _records(state: dict[str, Any], resource: str) -> list[Any]:
    value = state.get(resource, [])
    return value if isinstance(value, list) else [value]


def _row(assertion_id: str, passed: bool, weight: float, justification: str, evidence: dict[str, Any]) -> dict[str, Any]:
    return {"id": assertion_id, "result": "pass" if passed else "fail", "score": 1.0 if passed else 0.0,
            "weight": weight, "justification": justification, "evidence": evidence}


def _check_path(record: Any, check: PathAssertion) -> tuple[bool, dict[str, Any]]:
    actual = get_path(record, check.path)
    shown = None if actual is _MISSING else actual
    evidence: dict[str, Any] = {"path": check.path, "actual": shown, "present": actual is not _MISSING}
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


def state_match(state: dict[str, Any], a: StateMatch) -> dict[str, Any]:
    """The correlated record(s) must satisfy every path assertion."""
    corr = a.correlate_by
    records = [r for r in _records(state, corr.resource)
               if corr.value is None or _equal(get_path(r, corr.key), corr.value)]
    base = {"resource": corr.resource, "key": corr.key, "value": corr.value, "matched_records": len(records)}
    if not records:
        return _row(a.id, False, a.weight, f"no record in '{corr.resource}' with {corr.key} = {corr.value!r}",
                    {**base, "checks": []})
    checks, failures = [], []
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


def record_count(state: dict[str, Any], a: RecordCount) -> dict[str, Any]:
    """How many records (matching ``where``) a resource holds."""
    count = sum(1 for r in _records(state, a.resource)
                if all(_equal(get_path(r, k), v) for k, v in a.where.items()))
    ok = ((a.equals is None or count == a.equals) and (a.at_least is None or count >= a.at_least)
          and (a.at_most is None or count <= a.at_most))
    expected = {k: v for k, v in (("equals", a.equals), ("at_least", a.at_least), ("at_most", a.at_most))
                if v is not None}
    return _row(a.id, ok, a.weight, f"{count} record(s) in '{a.resource}' matching {a.where or 'anything'}",
                {"resource": a.resource, "where": a.where, "actual": count, "expected": expected})


def file_present(state: dict[str, Any], a: FilePresent) -> dict[str, Any]:
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


def evaluate(state: dict[str, Any], assertion: StateMatch | RecordCount | FilePresent) -> dict[str, Any]:
    """One row for one assertion, with its label and axis when it has them."""
    if isinstance(assertion, StateMatch):
        row = state_match(state, assertion)
    elif isinstance(assertion, RecordCount):
        row = record_count(state, assertion)
    else:
        row = file_present(state, assertion)
    for name in ("label", "axis"):
        if getattr(assertion, name) is not None:
            row[name] = getattr(assertion, name)
    return row
