"""The gate a pipeline sets on a benchmark run: a minimum mean score, and no regression.

``fail_under`` fails a run whose mean score (by the denominator policy) is below it, or that
counted no task run at all. ``fail_on_regression`` fails a run whose paired comparison with its
baseline marks the overall row *worse* (:attr:`Comparison.regressed`): the pass rate by McNemar's
test or the mean score by the bootstrap and the sign test, at the comparison's confidence. Rows
per tag, axis and task are not gated: each is tested at that confidence, and among many rows
some are marked by chance alone; they are listed for a person to read.
"""

from __future__ import annotations

from pydantic import Field

from prefect_agentenv.results.comparison.compare import Comparison
from prefect_agentenv.results.rows import StatsModel
from prefect_agentenv.results.stats.summary import BenchmarkSummary


class GateResult(StatsModel):
    """Whether a run passed the gate it was given, and why, in one line."""

    passed: bool
    reason: str
    """One line: every check that failed (or, when it passed, what was checked)."""
    checks: list[str] = Field(default_factory=list)
    """Each check with its outcome."""
    fail_under: float | None = None
    fail_on_regression: bool = False


def check_gate(summary: BenchmarkSummary, comparison: Comparison | None, *, fail_under: float | None = None,
               fail_on_regression: bool = False) -> GateResult | None:
    """The run against its gate; ``None`` when no gate was set.

    A run with nothing to compare with (no baseline yet, or no task run shared with it) passes
    ``fail_on_regression`` and says so: the first run of a pipeline has no baseline.
    """
    if fail_under is None and not fail_on_regression:
        return None
    failed: list[str] = []
    checks: list[str] = []
    if fail_under is not None:
        mean = summary.mean_score
        if mean is None:
            failed.append(f"no task run was counted, so there is no mean score to hold to {fail_under:g}")
        elif mean < fail_under:
            failed.append(f"mean score {mean:.3f} is under {fail_under:g}")
        else:
            checks.append(f"mean score {mean:.3f} is at least {fail_under:g}")
    if fail_on_regression:
        found = _regression(comparison)
        (failed if comparison is not None and comparison.regressed else checks).append(found)
    reason = "; ".join(failed) if failed else "; ".join(checks)
    return GateResult(passed=not failed, reason=reason, checks=[*failed, *checks], fail_under=fail_under,
                      fail_on_regression=fail_on_regression)


def _regression(comparison: Comparison | None) -> str:
    if comparison is None:
        return "no baseline run to compare with"
    baseline = f"run {comparison.previous_run_id}" if comparison.previous_run_id else "the baseline run"
    if comparison.overall is None:
        return f"no task run is in both this run and {baseline}"
    setup = comparison.setup.sentence()
    if comparison.regressed:
        return f"worse than {baseline}: {comparison.overall.sentence()} ({setup})"
    return f"not worse than {baseline}: {comparison.overall.sentence()} ({setup})"
