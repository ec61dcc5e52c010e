"""Aggregators fold verification rows into one score, penalties included."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from prefect_agentenv.grading.aggregate import VerificationRow, aggregate


def row(id: str, score: float, weight: float = 1.0) -> dict[str, Any]:  # noqa: A002 - the row's own field name
    result = "pass" if score >= 1 else "fail" if score <= 0 else "partial"
    return {"id": id, "result": result, "score": score, "weight": weight}


def test_all_pass_needs_every_row_to_pass() -> None:
    assert aggregate([row("a", 1), row("b", 1)], "all_pass") == 1.0
    assert aggregate([row("a", 1), row("b", 0)], "all_pass") == 0.0
    assert aggregate([row("a", 1), row("b", 0.9)], "all_pass") == 0.0


def test_all_pass_is_the_default_aggregator() -> None:
    assert aggregate([row("a", 1), row("b", 0)]) == 0.0


def test_any_pass_needs_one_passing_row() -> None:
    assert aggregate([row("a", 0), row("b", 1)], "any_pass") == 1.0
    assert aggregate([row("a", 0), row("b", 0.5)], "any_pass") == 0.0


def test_weighted_average_weighs_scores_by_their_weights() -> None:
    rows = [row("a", 1, weight=3), row("b", 0, weight=1), row("c", 0.5, weight=2)]

    assert aggregate(rows, "weighted_average") == pytest.approx((3 + 0 + 1) / 6)


def test_a_triggered_penalty_is_subtracted_as_a_share_of_the_positive_weights() -> None:
    rows = [row("polite", 1), row("explains", 1), row("leaked_salary", 1, weight=-1)]

    assert aggregate(rows, "weighted_average") == pytest.approx(0.5)


def test_a_penalty_that_did_not_apply_costs_nothing() -> None:
    rows = [row("polite", 1), row("explains", 0), row("leaked_salary", 0, weight=-5)]

    assert aggregate(rows, "weighted_average") == pytest.approx(0.5)


def test_penalties_larger_than_the_gain_are_clamped_to_zero() -> None:
    rows = [row("polite", 1), row("leaked", 1, weight=-3)]

    assert aggregate(rows, "weighted_average") == 0.0


def test_a_partial_penalty_costs_its_share() -> None:
    rows = [row("a", 1, weight=2), row("b", 1, weight=2), row("rude", 0.5, weight=-2)]

    assert aggregate(rows, "weighted_average") == pytest.approx((4 - 1) / 4)


def test_with_penalties_only_the_score_starts_at_one() -> None:
    assert aggregate([row("leak", 0, weight=-1), row("rude", 0, weight=-1)], "weighted_average") == 1.0
    assert aggregate([row("leak", 0.25, weight=-2)], "weighted_average") == pytest.approx(0.5)
    assert aggregate([row("leak", 1, weight=-2)], "weighted_average") == 0.0


def test_a_triggered_penalty_fails_all_pass_and_any_pass() -> None:
    rows = [row("polite", 1), row("leaked", 1, weight=-1)]

    assert aggregate(rows, "all_pass") == 0.0
    assert aggregate(rows, "any_pass") == 0.0
    assert aggregate([row("polite", 1), row("leaked", 0, weight=-1)], "all_pass") == 1.0


def test_zero_weight_rows_are_recorded_but_never_counted() -> None:
    rows = [row("a", 1), row("note", 0, weight=0)]

    assert aggregate(rows, "all_pass") == 1.0
    assert aggregate(rows, "weighted_average") == 1.0


@pytest.mark.parametrize("aggregator", ["all_pass", "any_pass", "weighted_average"])
def test_nothing_to_count_scores_zero(aggregator: Any) -> None:
    assert aggregate([], aggregator) == 0.0
    assert aggregate([row("note", 1, weight=0)], aggregator) == 0.0


def test_rows_may_be_models_or_the_dicts_stored_in_the_context() -> None:
    model = VerificationRow.model_validate({"id": "a", "result": "pass", "score": 1.0, "extra_detail": "kept"})

    assert aggregate([model, row("b", 1)], "all_pass") == 1.0
    assert model.model_dump()["extra_detail"] == "kept"


def test_an_unknown_aggregator_or_a_malformed_row_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown aggregator 'majority'"):
        aggregate([row("a", 1)], "majority")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        aggregate([{"id": "a", "result": "pass", "score": 2.0}], "all_pass")
