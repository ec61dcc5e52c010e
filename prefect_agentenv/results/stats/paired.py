"""Paired tests: exact McNemar on pass/fail, the exact sign test and a seeded paired bootstrap on scores.

Two runs of a benchmark attempt the same ``(task, seed, epoch)`` keys, so each key shared by
both gives a *pair* of results. Testing the differences within pairs removes the variation
between tasks (an easy task is easy in both runs), which two independent samples cannot: a
drop that an unpaired interval hides is plain in the pairs.

Pure functions of counts and differences, standard library only: ``math.comb`` for the
binomial tail, ``random.Random`` with a fixed seed for the bootstrap, so a comparison gives
the same numbers on every machine and every time.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from statistics import fmean

from prefect_agentenv.results.stats.intervals import DEFAULT_CONFIDENCE, Interval

DEFAULT_RESAMPLES = 2000
"""Bootstrap resamples: enough for a stable 95% percentile interval (Efron and Tibshirani advise
at least 1,000), and quick in pure Python for a few thousand pairs."""
DEFAULT_SEED = 0
"""The bootstrap's seed unless one is given: the same runs always give the same interval."""
EXACT_LIMIT = 1000
"""Up to this many discordant pairs McNemar's test is exact (binomial); above it the
continuity-corrected chi-square, which agrees with the exact test to within 0.001 there."""


def binomial_two_sided(successes: int, trials: int) -> float:
    """Exact two-sided p-value of ``successes`` in ``trials`` under a probability of 1/2.

    The distribution is symmetric, so the two-sided p-value is twice the smaller tail::

        p = min(1, 2 · Σ_{i ≤ min(k, n − k)} C(n, i) / 2ⁿ)

    It is 1 when there are no trials. Integer arithmetic, then one division: no rounding until
    the end (a float ``2ⁿ`` overflows past n ≈ 1000, an integer does not).

    Raises:
        ValueError: ``successes`` is not in ``0..trials``.
    """
    if not 0 <= successes <= trials:
        raise ValueError(f"successes={successes} must be between 0 and trials={trials}")
    if trials == 0:
        return 1.0
    tail = sum(math.comb(trials, i) for i in range(min(successes, trials - successes) + 1))
    return min(1.0, 2 * tail / 2**trials)


def mcnemar(lost: int, gained: int) -> tuple[float, str]:
    """McNemar's test of paired pass/fail results: its two-sided p-value and the method used.

    Only the discordant pairs say anything: ``lost`` passed before and not now, ``gained`` the
    other way round. Under no change each discordant pair is a fair coin, so the exact test is
    :func:`binomial_two_sided` of ``lost`` in ``lost + gained``. Above :data:`EXACT_LIMIT`
    discordant pairs the continuity-corrected chi-square with one degree of freedom is used,
    ``χ² = (|lost − gained| − 1)² / (lost + gained)``, ``p = erfc(√(χ²/2))``.

    Raises:
        ValueError: a count is negative.
    """
    if lost < 0 or gained < 0:
        raise ValueError(f"counts must not be negative: lost={lost}, gained={gained}")
    discordant = lost + gained
    if discordant <= EXACT_LIMIT:
        return binomial_two_sided(lost, discordant), "exact"
    chi2 = max(0, abs(lost - gained) - 1) ** 2 / discordant
    return math.erfc(math.sqrt(chi2 / 2)), "chi-square"


def sign_test(differences: Sequence[float]) -> float:
    """Exact two-sided sign test of paired differences: do they lean one way more than chance?

    Ties (differences of 0) say nothing about a direction and are left out; the rest are a fair
    coin under no change, as in McNemar's test (which it is, for pass/fail scores).
    """
    positive = sum(1 for d in differences if d > 0)
    negative = sum(1 for d in differences if d < 0)
    return binomial_two_sided(positive, positive + negative)


def fewest_decisive_pairs(confidence: float = DEFAULT_CONFIDENCE) -> int:
    """The fewest pairs with which McNemar's exact test or the sign test can reach ``confidence``.

    The smallest p-value either can give on ``n`` pairs is ``2 / 2ⁿ`` (every pair changed the same
    way), so below the smallest ``n`` with ``2 / 2ⁿ < 1 − confidence`` no result, however lopsided,
    is told apart from chance: 6 pairs at 95%, 8 at 99%. A bootstrap interval on fewer pairs can
    exclude 0 and still mean nothing (five equal drops resample to a zero-width interval).

    Raises:
        ValueError: ``confidence`` is not in (0, 1).
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence={confidence} must be in (0, 1)")
    n = 1
    while 2 / 2**n >= 1 - confidence:
        n += 1
    return n


def paired_bootstrap(differences: Sequence[float], confidence: float = DEFAULT_CONFIDENCE, *,
                     resamples: int = DEFAULT_RESAMPLES, seed: int | str = DEFAULT_SEED) -> Interval | None:
    """Percentile bootstrap interval of the mean paired difference (``None`` for fewer than 2 pairs).

    The pairs are resampled with replacement ``resamples`` times (each pair keeps its two results
    together, which is what makes it paired); the interval is the ``α/2`` and ``1 − α/2``
    quantiles of the resampled means (linear interpolation between order statistics). The
    generator is ``random.Random(seed)``: the same differences and seed give the same interval.

    With few pairs the interval is too narrow (three equal differences resample to one value):
    a verdict should not rest on it alone, which is why the comparison also asks the sign test.

    Raises:
        ValueError: ``confidence`` is not in (0, 1) or ``resamples`` is below 1.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence={confidence} must be in (0, 1)")
    if resamples < 1:
        raise ValueError(f"resamples={resamples} must be at least 1")
    n = len(differences)
    if n < 2:
        return None
    values = [float(d) for d in differences]
    if min(values) == max(values):
        low = high = values[0]
    else:
        rng = random.Random(seed)
        means = sorted(math.fsum(rng.choices(values, k=n)) / n for _ in range(resamples))
        alpha = 1 - confidence
        low, high = _quantile(means, alpha / 2), _quantile(means, 1 - alpha / 2)
    return Interval(low=low, high=high, confidence=confidence, method="paired-bootstrap")


def _quantile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile of sorted values, interpolating between the two nearest (type 7)."""
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def mean_difference(differences: Sequence[float]) -> float | None:
    """The mean of the paired differences (``None`` without pairs): the effect size."""
    return fmean(differences) if differences else None
