"""Agreement, Cohen's κ and TPR/TNR of pass/fail verdicts against reference labels."""

from __future__ import annotations

import pytest

from prefect_agentenv.results.judges.agreement import agreement_stats


def test_kappa_tpr_and_tnr_of_a_known_table_match_the_hand_computation() -> None:
    # TP 8, FN 2, FP 3, TN 7 (n 20): p_o = 15/20; judge passes 11/20, human 10/20;
    # p_e = 11/20·10/20 + 9/20·10/20 = 1/2; κ = (3/4 − 1/2)/(1/2) = 1/2.
    pairs = [(True, True)] * 8 + [(False, True)] * 2 + [(True, False)] * 3 + [(False, False)] * 7
    stats = agreement_stats(pairs)
    assert (stats.n, stats.agreement, stats.kappa) == (20, 0.75, pytest.approx(0.5))
    assert (stats.tpr, stats.tpr_n, stats.tnr, stats.tnr_n) == (0.8, 10, 0.7, 10)
    assert stats.tpr_interval is not None and stats.tpr_interval.low < 0.8 < stats.tpr_interval.high


def test_unscored_verdicts_are_counted_apart_and_left_out_of_every_figure() -> None:
    stats = agreement_stats([(None, True), (True, True), (False, False)])
    assert (stats.n, stats.unscored, stats.agreement, stats.kappa) == (2, 1, 1.0, 1.0)


def test_kappa_is_undefined_when_both_sides_gave_a_single_verdict() -> None:
    stats = agreement_stats([(True, True)] * 5)
    assert stats.agreement == 1.0 and stats.kappa is None and stats.tnr is None and stats.tnr_n == 0
