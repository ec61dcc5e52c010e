"""Estimators and confidence intervals: pass@k, pass^k, Student t and Wilson intervals.

Pure functions of counts and scores; the standard library has no t distribution, so its
quantile is computed here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist, fmean, stdev

from prefect_agentenv.results.rows import StatsModel

DEFAULT_CONFIDENCE = 0.95

# Beyond this many degrees of freedom Student's t is the normal distribution to 3 decimals,
# and the exact series below (one term per degree of freedom) is not worth its cost.
_NORMAL_DF = 1000
_BISECTION_STEPS = 200


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of ``k`` attempts passes, from ``c`` passes in ``n`` runs.

    The unbiased estimator (Chen et al., 2021): ``pass@k = 1 − C(n−c, k) / C(n, k)`` — one
    minus the chance that ``k`` runs drawn without replacement from the ``n`` are all failures.

    Raises:
        ValueError: ``k`` is not in ``1..n`` or ``c`` not in ``0..n``.
    """
    _check_counts(n, c, k)
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Probability that ``k`` attempts all pass (pass^k), from ``c`` passes in ``n`` runs.

    ``pass^k = C(c, k) / C(n, k)``: the chance that ``k`` runs drawn without replacement from
    the ``n`` are all passes. It measures reliability where pass@k measures capability.

    Raises:
        ValueError: ``k`` is not in ``1..n`` or ``c`` not in ``0..n``.
    """
    _check_counts(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def _check_counts(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise ValueError(f"passes c={c} must be between 0 and the number of runs n={n}")
    if not 1 <= k <= n:
        raise ValueError(f"k={k} must be between 1 and the number of runs n={n}")


class Interval(StatsModel):
    """A confidence interval."""

    low: float
    high: float
    confidence: float = DEFAULT_CONFIDENCE
    method: str
    """How it was computed (``student-t``, ``wilson``)."""

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2


def mean_interval(values: Sequence[float], confidence: float = DEFAULT_CONFIDENCE, *,
                  bounds: tuple[float, float] | None = (0.0, 1.0)) -> Interval | None:
    """Student-t confidence interval for the mean of ``values`` (``None`` for fewer than 2).

    ``mean ± t(1 − α/2, n − 1) · s / √n`` with ``s`` the sample standard deviation (n − 1 in
    the denominator) and ``α = 1 − confidence``. The t quantile is computed exactly (see
    :func:`student_t_quantile`), so small benchmarks get honest, wider intervals than the
    normal approximation would give. All-equal values give a zero-width interval.

    Scores live in [0, 1], so by default the interval is clipped to ``bounds`` (with few runs
    the symmetric interval easily reaches past them); ``bounds=None`` keeps it as computed.
    """
    n = len(values)
    if n < 2:
        return None
    mean = fmean(values)
    half = student_t_quantile(0.5 + confidence / 2, n - 1) * stdev(values) / math.sqrt(n)
    low, high = mean - half, mean + half
    if bounds is not None:
        low, high = max(bounds[0], low), min(bounds[1], high)
    return Interval(low=low, high=high, confidence=confidence, method="student-t")


def wilson_interval(successes: int, n: int, confidence: float = DEFAULT_CONFIDENCE) -> Interval | None:
    """Wilson score interval for a proportion ``successes / n`` (``None`` when ``n`` is 0).

    With ``p = successes / n`` and ``z`` the normal quantile at ``1 − α/2``::

        centre = (p + z²/2n) / (1 + z²/n)
        half   = z / (1 + z²/n) · √(p(1 − p)/n + z²/4n²)

    Unlike ``p ± z·√(p(1−p)/n)`` it stays inside [0, 1] and is not zero-width at 0 or 1.
    """
    if n <= 0:
        return None
    p = successes / n
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return Interval(low=max(0.0, centre - half), high=min(1.0, centre + half), confidence=confidence,
                    method="wilson")


def student_t_quantile(p: float, df: int) -> float:
    """Quantile of Student's t distribution with ``df`` degrees of freedom, for ``p`` in (0.5, 1).

    The standard library has no t distribution, so this inverts the closed form of its
    two-sided CDF for integer ``df`` (Abramowitz & Stegun 26.7.3–4) by bisection; beyond
    1000 degrees of freedom it returns the normal quantile (they agree to 3 decimals).
    """
    if not 0.5 < p < 1:
        raise ValueError(f"p={p} must be in (0.5, 1)")
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1, not {df}")
    if df > _NORMAL_DF:
        return NormalDist().inv_cdf(p)
    target = 2 * p - 1  # P(|T| <= t)
    low, high = 0.0, 1.0
    while _t_two_sided_cdf(high, df) < target:
        high *= 2
    for _ in range(_BISECTION_STEPS):
        mid = (low + high) / 2
        if _t_two_sided_cdf(mid, df) < target:
            low = mid
        else:
            high = mid
        if high - low < 1e-12:
            break
    return (low + high) / 2


def _t_two_sided_cdf(t: float, df: int) -> float:
    """``P(|T| <= t)`` for Student's t with integer ``df``, by A&S 26.7.3 (odd) and 26.7.4 (even).

    With ``θ = atan(t/√df)``: for odd df, ``(2/π)(θ + sinθ·(cosθ + ⅔cos³θ + … ))`` (only ``θ``
    when df = 1); for even df, ``sinθ·(1 + ½cos²θ + ⅜cos⁴θ + …)``; each series runs to the
    power ``df − 2``.
    """
    theta = math.atan(t / math.sqrt(df))
    sin, cos2 = math.sin(theta), math.cos(theta) ** 2
    if df % 2:
        if df == 1:
            return 2 * theta / math.pi
        term = total = math.cos(theta)
        for j in range(3, df - 1, 2):  # terms cos^j θ, coefficient (j−1)/j times the previous
            term *= cos2 * (j - 1) / j
            total += term
        return 2 / math.pi * (theta + sin * total)
    term = total = 1.0
    for j in range(2, df - 1, 2):  # terms cos^j θ, coefficient (j−1)/j times the previous
        term *= cos2 * (j - 1) / j
        total += term
    return sin * total
