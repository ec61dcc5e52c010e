"""The Verification model: records keep the key order reports print, readers are liberal."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from prefect_agentenv.context import PromptResponse
from prefect_agentenv.grading.outcome import task_score
from prefect_agentenv.grading.verification import Verification, VerificationRow, errored, prompt_error, scored, skipped

ROW = {"id": "a", "result": "pass", "score": 1.0, "weight": 1.0}


@pytest.mark.parametrize(("verification", "keys"), [
    (scored([ROW], aggregator="all_pass", weight=1.0, fmt="probe", url="u", card={}),
     ["results", "score", "weight", "aggregator", "format", "url", "card"]),
    (scored([ROW], aggregator="all_pass", weight=1.0),
     ["results", "score", "weight", "aggregator"]),
    (skipped("timeout", weight=1.0, fmt="judge", axes=["tone"]),
     ["results", "score", "weight", "skipped", "skip_reason", "format", "axes"]),
    (skipped("every aggregated verifier was skipped", weight=1.0, fmt="aggregate", verifier_ids=["x"]),
     ["results", "score", "weight", "skipped", "skip_reason", "format", "verifier_ids"]),
    (errored("boom", weight=1.0, axes={}, step_type="rubrics_verifier"),
     ["results", "score", "weight", "errored", "error", "step_type", "axes"]),
    (prompt_error(PromptResponse(prompt_id="p1", prompt="p", error="gone"), weight=1.0, fmt="outcome"),
     ["results", "score", "weight", "format"]),
], ids=["scored-extras", "scored", "skipped-axes", "skipped-extras", "errored", "prompt-error"])
def test_a_record_keeps_the_key_order_the_reports_print(verification: Verification, keys: list[str]) -> None:
    assert list(verification.record()) == keys


def test_a_new_verification_is_validated() -> None:
    with pytest.raises(ValidationError, match="axes"):
        skipped("timeout", weight=1.0, axes="tone")  # type: ignore[arg-type]


def test_a_record_from_a_plugin_is_read_liberally() -> None:
    raw = {"score": "high", "weight": True, "results": [ROW, "not a row"], "axes": "tone", "note": "kept"}
    read = Verification.read(raw)
    assert (read.score, read.weight, [r.model_dump() for r in read.results], read.axes) == (None, 1.0, [ROW], None)
    assert read.counted_score == 0.0  # not a number: counts 0, never lifts the score
    assert read.model_extra == {"note": "kept"}
    assert Verification.read({"skipped": True, "score": 0.9}).counted_score is None
    assert Verification.read({"score": 1.7}).counted_score == 1.0


def test_records_and_read_verifications_score_alike() -> None:
    records = {"a": scored([ROW], aggregator="all_pass", weight=1.0).record(),
               "b": errored("boom", weight=3.0).record()}
    assert task_score(records) == task_score({vid: Verification.read(v) for vid, v in records.items()}) == 0.25


def test_a_row_is_typed_and_written_with_its_keys_in_the_order_given() -> None:
    probe = {"id": "card", "result": "pass", "score": 1.0, "weight": 0.0, "status": "declared", "justification": None}
    verification = scored([probe, {**ROW, "axis": "tone", "evidence": {"actual": 1}}], aggregator="all_pass",
                          weight=1.0)
    first, second = verification.results
    assert isinstance(first, VerificationRow) and (first.weight, first.justification) == (0.0, None)
    assert (second.axis, second.model_extra) == ("tone", {"evidence": {"actual": 1}})
    assert verification.record()["results"] == [probe, {**ROW, "axis": "tone", "evidence": {"actual": 1}}]
    made = VerificationRow(id="c1", result="partial", score=0.5, justification="half")
    assert made.model_dump() == {"id": "c1", "result": "partial", "score": 0.5, "justification": "half"}


def test_an_invalid_row_is_refused_when_made_and_read_liberally_when_stored() -> None:
    with pytest.raises(ValueError, match="score"):
        scored([{**ROW, "score": 2.0}], aggregator="all_pass", weight=1.0)
    raw = {"result": "PASS", "score": "high", "weight": "heavy", "axis": 3, "note": "kept"}
    row = VerificationRow.read(raw, 1)
    assert (row.id, row.result, row.score, row.weight, row.axis) == ("row2", "fail", 0.0, 1.0, None)
    assert list(row.model_dump()) == ["result", "score", "weight", "axis", "note"]  # its own keys, in its order
    assert Verification.read({"results": [{"id": "x", "result": "pass", "score": 1}]}).results[0].score == 1.0
