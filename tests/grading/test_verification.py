"""The Verification model: records keep the key order reports print, readers are liberal."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from prefect_agentenv.context import PromptResponse
from prefect_agentenv.grading.outcome import task_score
from prefect_agentenv.grading.verification import Verification, errored, prompt_error, scored, skipped

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
    assert (read.score, read.weight, read.results, read.axes) == (None, 1.0, [ROW], None)
    assert read.counted_score == 0.0  # not a number: counts 0, never lifts the score
    assert read.model_extra == {"note": "kept"}
    assert Verification.read({"skipped": True, "score": 0.9}).counted_score is None
    assert Verification.read({"score": 1.7}).counted_score == 1.0


def test_records_and_read_verifications_score_alike() -> None:
    records = {"a": scored([ROW], aggregator="all_pass", weight=1.0).record(),
               "b": errored("boom", weight=3.0).record()}
    assert task_score(records) == task_score({vid: Verification.read(v) for vid, v in records.items()}) == 0.25
