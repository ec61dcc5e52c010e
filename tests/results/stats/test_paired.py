"""The paired tests: exact McNemar, the sign test and the paired bootstrap against hand-computed values."""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest

from prefect_agentenv.results import (
    binomial_two_sided,
    mcnemar,
    paired_bootstrap,
    sign_test,
)
from prefect_agentenv.results.stats.paired import EXACT_LIMIT, fewest_decisive_pairs


@pytest.mark.parametrize(("k", "n", "expected"), [
    (0, 6, 2 / 64),             # 2 · C(6,0) / 2⁶
    (1, 9, 2 * 10 / 512),       # 2 · (C(9,0) + C(9,1)) / 2⁹
    (8, 8, 2 / 256),
    (2, 10, 2 * 56 / 1024),     # 2 · (1 + 10 + 45) / 2¹⁰
    (3, 6, 1.0),                # the middle: capped at 1
    (0, 0, 1.0),                # no trials, no evidence
])
def test_the_exact_binomial_test_matches_hand_computed_values(k: int, n: int, expected: float) -> None:
    assert binomial_two_sided(k, n) == pytest.approx(expected)
    assert binomial_two_sided(n - k, n) == pytest.approx(expected)  # symmetric


def test_the_binomial_test_does_not_overflow_with_many_trials() -> None:
    assert binomial_two_sided(1500, 3000) == pytest.approx(1.0, abs=0.02)
    assert 0 <= binomial_two_sided(1300, 3000) < 1e-12


def test_mcnemar_is_exact_on_the_discordant_pairs_and_ignores_the_concordant_ones() -> None:
    # 1 lost, 8 gained: 2 · (1 + 9) / 512, whatever the number of pairs that did not change.
    assert mcnemar(1, 8) == (pytest.approx(0.0390625), "exact")
    assert mcnemar(8, 0)[0] == pytest.approx(0.0078125)
    assert mcnemar(0, 0) == (1.0, "exact")


def test_mcnemar_above_the_exact_limit_is_the_continuity_corrected_chi_square() -> None:
    lost, gained = 600, 500  # χ² = (100 − 1)² / 1100 = 8.91
    p, method = mcnemar(lost, gained)
    assert method == "chi-square"
    assert p == pytest.approx(math.erfc(math.sqrt(99 ** 2 / 1100 / 2)))
    assert p == pytest.approx(binomial_two_sided(lost, lost + gained), abs=0.001)
    assert mcnemar(EXACT_LIMIT // 2, EXACT_LIMIT // 2)[1] == "exact"


def test_the_sign_test_leaves_ties_out() -> None:
    assert sign_test([-1, -0.5, 0, 0, -1, -0.2, -1, -1]) == pytest.approx(2 / 64)  # 6 down, none up
    assert sign_test([0.0, 0.0]) == 1.0


def test_the_paired_bootstrap_is_reproducible_with_its_seed() -> None:
    differences = [0.1 * (i % 7) - 0.3 for i in range(40)]
    first = paired_bootstrap(differences, seed=7)
    assert first == paired_bootstrap(differences, seed=7)
    assert first != paired_bootstrap(differences, seed=8)
    assert first is not None and first.low < sum(differences) / 40 < first.high


def test_the_paired_bootstrap_agrees_with_the_normal_interval_on_many_pairs() -> None:
    differences = [0.0, 1.0] * 200  # mean 0.5, standard error 0.5 / √400 = 0.025
    interval = paired_bootstrap(differences, 0.95, resamples=4000, seed=1)
    z = NormalDist().inv_cdf(0.975)
    assert interval is not None
    assert interval.low == pytest.approx(0.5 - z * 0.025, abs=0.01)
    assert interval.high == pytest.approx(0.5 + z * 0.025, abs=0.01)


@pytest.mark.parametrize(("confidence", "fewest"), [(0.95, 6), (0.9, 5), (0.99, 8)])
def test_the_fewest_decisive_pairs_are_where_two_over_two_to_the_n_first_falls_under_alpha(
        confidence: float, fewest: int) -> None:
    assert fewest_decisive_pairs(confidence) == fewest
    assert binomial_two_sided(0, fewest) < 1 - confidence <= binomial_two_sided(0, fewest - 1)


def test_the_paired_bootstrap_needs_two_pairs_and_is_exact_on_equal_differences() -> None:
    assert paired_bootstrap([0.4]) is None
    interval = paired_bootstrap([-1.0, -1.0, -1.0])
    assert interval is not None and (interval.low, interval.high) == (-1.0, -1.0)
