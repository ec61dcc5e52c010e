"""Benchmark results and their statistics: summaries, confidence intervals, pass@k, comparisons.

Everything here is pure: it takes :class:`TaskResult` rows (one per task run of a benchmark)
and returns models and markdown. Storing the rows is :mod:`prefect_agentenv.flows.results`.

**Denominator policy** (docs/scoring.md): ``PASSED``, ``BELOW_ONE``, ``FAILED`` and
``TIMED_OUT`` runs count in the mean score and the pass rate, FAILED and TIMED_OUT with score 0
(a crash or a timeout must not make a run look better); ``UNSCORED`` runs are counted
separately and left out of both, since there was nothing to grade.

**Run keys.** A benchmark runs each task with each seed for each epoch; ``(task_id,
seed_index, epoch)`` identifies one run. A resumed benchmark may hold several results for one
key (the errored attempt, then the rerun): the last one wins everywhere in this module.

**A "task"** in per-task statistics (pass@k, comparisons) is a ``(task_id, seed_index)`` pair:
a seed can change the instruction or the data, so two seeds are two problems; epochs are
repeated attempts at the same problem.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from statistics import NormalDist, fmean, stdev
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, computed_field

from prefect_agentenv.grading.outcome import Outcome

DEFAULT_CONFIDENCE = 0.95
DENOMINATOR_OUTCOMES = frozenset({Outcome.PASSED, Outcome.BELOW_ONE, Outcome.FAILED, Outcome.TIMED_OUT})
"""Outcomes that count in the mean score and the pass rate."""
ERRORED_OUTCOMES = frozenset({Outcome.FAILED, Outcome.TIMED_OUT})
"""Outcomes of runs that did not finish normally; they score 0 and are rerun on resume."""
DENOMINATOR_POLICY = (
    "PASSED, BELOW_ONE, FAILED and TIMED_OUT runs count in the mean score and the pass rate "
    "(FAILED and TIMED_OUT score 0); UNSCORED runs are reported separately and left out of both."
)

# Beyond this many degrees of freedom Student's t is the normal distribution to 3 decimals,
# and the exact series below (one term per degree of freedom) is not worth its cost.
_NORMAL_DF = 1000
_BISECTION_STEPS = 200


class RunKey(NamedTuple):
    """Identity of one task run in a benchmark: the task, which of its seeds, which epoch."""

    task_id: str
    seed_index: int = 0
    epoch: int = 0

    def label(self) -> str:
        return f"{self.task_id} [seed {self.seed_index}, epoch {self.epoch}]"


TaskKey = tuple[str, int]
"""``(task_id, seed_index)``: one problem of the benchmark, attempted once per epoch."""

RunStatus = Literal["completed", "failed", "crashed"]
"""``completed`` / ``failed`` as in the task report; ``crashed``: the flow run ended without one."""


class _Model(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True)


class TaskSnapshot(_Model):
    """Where the frozen copy of the task document a run used is stored, and its content hash."""

    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """Hex sha256 of the canonical JSON of the document (sorted keys, no spaces, UTF-8)."""
    url: str
    """Object URL of the stored snapshot."""


class TaskResult(_Model):
    """One task run of a benchmark, as appended to the run's ``results.jsonl``.

    Readers of older files must keep working, so unknown members are ignored and every
    member added later needs a default.
    """

    task_id: str
    seed_index: int = 0
    """Position of the seed in the benchmark's seed list (0 when it has none)."""
    seed: dict[str, Any] = Field(default_factory=dict)
    """The seed's values, as substituted into the task document."""
    epoch: int = 0
    """Which repetition of the task and seed this is (0-based)."""
    tags: list[str] = Field(default_factory=list)
    status: RunStatus
    outcome: Outcome
    score: float | None = None
    """The task score; 0 for FAILED and TIMED_OUT, ``None`` when UNSCORED."""
    duration_s: float = 0.0
    error: str | None = None
    report_url: str | None = None
    """Where the run's report.json is stored."""
    flow_run_id: str | None = None
    snapshot: TaskSnapshot | None = None
    axis_scores: dict[str, float] = Field(default_factory=dict)
    """Score per axis (``correctness``, ``safety``…): see :func:`axis_scores`."""
    files: dict[str, str] = Field(default_factory=dict)
    """Files collected from the agent's sandbox: name → object URL."""
    started_at: str | None = None
    finished_at: str | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def run_key(self) -> RunKey:
        return RunKey(self.task_id, self.seed_index, self.epoch)

    @property
    def task_key(self) -> TaskKey:
        return (self.task_id, self.seed_index)

    @property
    def counted(self) -> bool:
        """Whether the run counts in the mean score and the pass rate (not UNSCORED)."""
        return self.outcome in DENOMINATOR_OUTCOMES

    @property
    def errored(self) -> bool:
        """Whether the run did not finish normally (FAILED, TIMED_OUT, or no report at all)."""
        return self.outcome in ERRORED_OUTCOMES or self.status == "crashed"

    @property
    def passed(self) -> bool:
        return self.outcome is Outcome.PASSED

    @property
    def counted_score(self) -> float:
        """The score as the mean counts it: errored runs (and a missing score) count 0."""
        return 0.0 if self.errored or self.score is None else float(self.score)


# -- axis scores --------------------------------------------------------------------------------


def axis_scores(verifications: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    """Score per axis from the verification rows that carry an ``axis`` member.

    Only verifiers that count in the task score contribute: not skipped, with a weight above 0
    (the verifiers an ``aggregate_verifiers`` step folds have weight 0, so their rows are not
    counted twice). Each row's effective weight is ``w = row weight × verifier weight`` (both
    1 by default), and per axis, with the weighted_average formula of
    :func:`prefect_agentenv.grading.aggregate.aggregate`::

        P = rows of the axis with w > 0,  N = rows of the axis with w < 0 (penalties)
        axis score = clamp((Σ_P w·s − Σ_N |w|·s) / Σ_P w, 0, 1)     (clamp(1 − Σ_N |w|·s) when P is empty)

    Rows without a numeric ``score`` or with weight 0 are ignored; an axis with no counted row
    is left out.
    """
    gains: dict[str, float] = defaultdict(float)
    totals: dict[str, float] = defaultdict(float)
    losses: dict[str, float] = defaultdict(float)
    seen: set[str] = set()
    for verification in verifications.values():
        verifier_weight = _number(verification.get("weight"), 1.0)
        if verification.get("skipped") or verifier_weight <= 0:
            continue
        for row in verification.get("results") or []:
            axis, score = row.get("axis"), row.get("score")
            if not isinstance(axis, str) or not axis or not _is_number(score):
                continue
            weight = _number(row.get("weight"), 1.0) * verifier_weight
            if weight > 0:
                gains[axis] += weight * float(score)
                totals[axis] += weight
            elif weight < 0:
                losses[axis] += -weight * float(score)
            else:
                continue
            seen.add(axis)
    scores = {}
    for axis in sorted(seen):
        raw = (gains[axis] - losses[axis]) / totals[axis] if totals[axis] > 0 else 1.0 - losses[axis]
        scores[axis] = min(1.0, max(0.0, raw))
    return scores


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _number(value: Any, default: float) -> float:
    return float(value) if _is_number(value) else default


# -- estimators ---------------------------------------------------------------------------------


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


class Interval(_Model):
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


# -- summaries ----------------------------------------------------------------------------------


class OutcomeCounts(_Model):
    """How many runs ended with each outcome."""

    passed: int = 0
    below_one: int = 0
    unscored: int = 0
    failed: int = 0
    timed_out: int = 0

    @property
    def total(self) -> int:
        return self.passed + self.below_one + self.unscored + self.failed + self.timed_out

    @property
    def denominator(self) -> int:
        """Runs counted in the mean score and the pass rate: every outcome but UNSCORED."""
        return self.total - self.unscored

    @property
    def errored(self) -> int:
        """Runs that did not finish normally (FAILED, TIMED_OUT); they count as score 0."""
        return self.failed + self.timed_out

    @property
    def failed_to_pass(self) -> int:
        """Runs that finished and were graded below 1 (BELOW_ONE)."""
        return self.below_one

    def add(self, outcome: Outcome) -> None:
        name = outcome.value.lower()
        setattr(self, name, getattr(self, name) + 1)


class Breakdown(_Model):
    """Mean score and pass rate of a subset of runs (one tag, one axis), by the same policy."""

    n: int
    """Runs counted (UNSCORED left out)."""
    mean: float | None = None
    pass_rate: float | None = None
    """For tags: the share of counted runs that passed; not defined for axes."""
    unscored: int = 0


class Headline(_Model):
    """The few numbers a runs index keeps of each run, for listing and comparing."""

    total: int
    denominator: int
    passed: int
    unscored: int
    errored: int
    mean_score: float | None = None
    pass_rate: float | None = None


class BenchmarkSummary(_Model):
    """Aggregate statistics of one benchmark run (see the module docstring for the policy)."""

    counts: OutcomeCounts
    tasks: int
    """Distinct ``(task_id, seed_index)`` problems."""
    epochs: int
    """Distinct epochs among the results."""
    mean_score: float | None = None
    """Mean of the counted scores over the denominator (errored runs as 0)."""
    mean_score_ci: Interval | None = None
    """Student-t interval of the mean score (needs two counted runs)."""
    pass_rate: float | None = None
    """PASSED runs / denominator."""
    pass_rate_ci: Interval | None = None
    """Wilson interval of the pass rate."""
    by_tag: dict[str, Breakdown] = Field(default_factory=dict)
    by_axis: dict[str, Breakdown] = Field(default_factory=dict)
    k: int | None = None
    """The k of pass@k and pass^k."""
    pass_at_k: float | None = None
    """Mean over tasks of the unbiased pass@k estimate."""
    pass_hat_k: float | None = None
    """Mean over tasks of pass^k (all k attempts pass)."""
    pass_k_tasks: int = 0
    """Tasks in the pass@k average: those with at least k counted runs."""
    denominator_policy: str = DENOMINATOR_POLICY

    @property
    def headline(self) -> Headline:
        return Headline(total=self.counts.total, denominator=self.counts.denominator, passed=self.counts.passed,
                        unscored=self.counts.unscored, errored=self.counts.errored, mean_score=self.mean_score,
                        pass_rate=self.pass_rate)


def latest_per_run_key(results: Iterable[TaskResult]) -> list[TaskResult]:
    """One result per run key, the last one given (a resumed run appends reruns after errors)."""
    latest: dict[RunKey, TaskResult] = {}
    for result in results:
        latest.pop(result.run_key, None)  # keep the order of the last attempts
        latest[result.run_key] = result
    return list(latest.values())


def summarize(results: Iterable[TaskResult], *, k: int | None = None,
              confidence: float = DEFAULT_CONFIDENCE) -> BenchmarkSummary:
    """Summarize a benchmark run's results (the last result of each run key).

    * ``mean_score = Σ counted_score / denominator`` where the denominator is every run but
      UNSCORED ones and errored runs count 0; its interval is :func:`mean_interval` (Student t).
    * ``pass_rate = PASSED / denominator`` with the :func:`wilson_interval`.
    * pass@k and pass^k: per task ``(task_id, seed_index)``, ``n`` = its counted runs (one per
      epoch), ``c`` = its PASSED runs; :func:`pass_at_k` and :func:`pass_hat_k` averaged over
      the tasks with ``n ≥ k`` (the estimators are undefined below that; ``pass_k_tasks`` says
      how many were averaged). ``k`` defaults to the number of epochs among the results.

    Args:
        results: the run's results, in the order they were appended.
        k: attempts for pass@k / pass^k.
        confidence: level of both intervals.

    Raises:
        ValueError: ``k`` is below 1.
    """
    if k is not None and k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    runs = latest_per_run_key(results)
    counts = OutcomeCounts()
    for run in runs:
        counts.add(run.outcome)
    scores = [run.counted_score for run in runs if run.counted]
    epochs = len({run.epoch for run in runs})
    k_used = k if k is not None else (epochs or None)
    pass_k = _pass_k(runs, k_used) if k_used else None
    return BenchmarkSummary(
        counts=counts,
        tasks=len({run.task_key for run in runs}),
        epochs=epochs,
        mean_score=fmean(scores) if scores else None,
        mean_score_ci=mean_interval(scores, confidence),
        pass_rate=counts.passed / counts.denominator if counts.denominator else None,
        pass_rate_ci=wilson_interval(counts.passed, counts.denominator, confidence),
        by_tag=_by_tag(runs),
        by_axis=_by_axis(runs),
        k=k_used,
        pass_at_k=pass_k[0] if pass_k else None,
        pass_hat_k=pass_k[1] if pass_k else None,
        pass_k_tasks=pass_k[2] if pass_k else 0,
    )


def _pass_k(runs: Sequence[TaskResult], k: int) -> tuple[float, float, int] | None:
    """Mean pass@k, mean pass^k and the number of tasks averaged (``None`` when none has k runs)."""
    tallies: dict[TaskKey, list[int]] = defaultdict(lambda: [0, 0])
    for run in runs:
        if run.counted:
            tally = tallies[run.task_key]
            tally[0] += 1
            tally[1] += run.passed
    eligible = [(n, c) for n, c in tallies.values() if n >= k]
    if not eligible:
        return None
    return (fmean(pass_at_k(n, c, k) for n, c in eligible),
            fmean(pass_hat_k(n, c, k) for n, c in eligible), len(eligible))


def _breakdown(runs: Sequence[TaskResult]) -> Breakdown:
    counted = [run for run in runs if run.counted]
    return Breakdown(
        n=len(counted),
        mean=fmean(run.counted_score for run in counted) if counted else None,
        pass_rate=sum(run.passed for run in counted) / len(counted) if counted else None,
        unscored=len(runs) - len(counted),
    )


def _by_tag(runs: Sequence[TaskResult]) -> dict[str, Breakdown]:
    """Per tag, the runs of the tasks carrying it, by the same denominator policy."""
    tagged: dict[str, list[TaskResult]] = defaultdict(list)
    for run in runs:
        for tag in dict.fromkeys(run.tags):
            tagged[tag].append(run)
    return {tag: _breakdown(tagged[tag]) for tag in sorted(tagged)}


def _by_axis(runs: Sequence[TaskResult]) -> dict[str, Breakdown]:
    """Per axis, the mean axis score over the runs that scored it, errored runs counting 0.

    An errored run rarely reaches its verifiers, so it counts 0 on every axis that any run of
    the same ``task_id`` scored: a crash must not lift an axis mean by leaving the average.
    """
    task_axes: dict[str, set[str]] = defaultdict(set)
    for run in runs:
        task_axes[run.task_id].update(run.axis_scores)
    values: dict[str, list[float]] = defaultdict(list)
    for run in runs:
        if run.errored:
            for axis in task_axes[run.task_id]:
                values[axis].append(0.0)
        elif run.counted:
            for axis, score in run.axis_scores.items():
                values[axis].append(score)
    return {axis: Breakdown(n=len(v), mean=fmean(v)) for axis, v in sorted(values.items())}


# -- comparison ---------------------------------------------------------------------------------

ChangeKind = Literal["improved", "regressed", "unchanged", "new", "missing"]


class TaskChange(_Model):
    """How one task ``(task_id, seed_index)`` fared against the previous run."""

    task_id: str
    seed_index: int = 0
    kind: ChangeKind
    previous_score: float | None = None
    """Mean counted score over the task's epochs in the previous run."""
    current_score: float | None = None
    previous_pass_rate: float | None = None
    current_pass_rate: float | None = None
    reasons: list[str] = Field(default_factory=list)
    """Why the task is flagged as regressed or counted as improved."""


class Comparison(_Model):
    """A benchmark run against the previous one; ``regressions`` lists what to look at."""

    threshold: float
    """Score change a task needs to count as improved or regressed."""
    previous_run_id: str | None = None
    current_run_id: str | None = None
    current_mean: float | None = None
    previous_mean: float | None = None
    previous_mean_ci: Interval | None = None
    mean_score_delta: float | None = None
    current_pass_rate: float | None = None
    previous_pass_rate: float | None = None
    pass_rate_delta: float | None = None
    mean_dropped_beyond_ci: bool = False
    """The current mean is below the previous run's confidence interval."""
    changes: list[TaskChange] = Field(default_factory=list)

    def of_kind(self, kind: ChangeKind) -> list[TaskChange]:
        return [change for change in self.changes if change.kind == kind]

    @property
    def regressions(self) -> list[str]:
        """Every flagged regression, one sentence each (empty when there is none)."""
        flagged = [f"{_task_label(c.task_id, c.seed_index)}: {'; '.join(c.reasons)}"
                   for c in self.of_kind("regressed")]
        if self.mean_dropped_beyond_ci and self.previous_mean_ci and self.current_mean is not None:
            flagged.insert(0, f"mean score {self.current_mean:.3f} is below the previous run's "
                              f"{_pct(self.previous_mean_ci.confidence)} interval "
                              f"[{self.previous_mean_ci.low:.3f}, {self.previous_mean_ci.high:.3f}]")
        return flagged

    @property
    def has_regressions(self) -> bool:
        return bool(self.regressions)

    def markdown(self) -> str:
        """A markdown section for the benchmark's summary artifact."""
        previous = f"run `{self.previous_run_id}`" if self.previous_run_id else "the previous run"
        lines = [
            f"## Compared with {previous}", "",
            "| | previous | current | change |", "|---|---|---|---|",
            f"| mean score | {_num(self.previous_mean)} | {_num(self.current_mean)} | "
            f"{_delta(self.mean_score_delta)} |",
            f"| pass rate | {_pct(self.previous_pass_rate)} | {_pct(self.current_pass_rate)} | "
            f"{_delta(self.pass_rate_delta, percent=True)} |",
            "",
        ]
        regressions = self.regressions
        if regressions:
            lines += [f"**{len(regressions)} regression(s) flagged:**", ""] + [f"- {r}" for r in regressions] + [""]
        else:
            lines += ["No regression flagged.", ""]
        counts = ", ".join(f"{len(self.of_kind(k))} {k}" for k in ("improved", "regressed", "new", "missing"))
        lines.append(f"Tasks: {counts} (threshold {self.threshold:g}).")
        changed = [c for c in self.changes if c.kind != "unchanged"]
        if changed:
            lines += ["", "| task | seed | change | previous score | current score | previous pass rate | "
                          "current pass rate | why |", "|---|---|---|---|---|---|---|---|"]
            for c in changed:
                lines.append(f"| {_cell(c.task_id)} | {c.seed_index} | {c.kind} | {_num(c.previous_score)} | "
                             f"{_num(c.current_score)} | {_pct(c.previous_pass_rate)} | {_pct(c.current_pass_rate)} | "
                             f"{_cell('; '.join(c.reasons))} |")
        return "\n".join(lines)


class _TaskStats(NamedTuple):
    score: float | None
    pass_rate: float | None
    unscored_only: bool


def _task_stats(results: Iterable[TaskResult]) -> dict[TaskKey, _TaskStats]:
    grouped: dict[TaskKey, list[TaskResult]] = defaultdict(list)
    for run in latest_per_run_key(results):
        grouped[run.task_key].append(run)
    stats = {}
    for key, runs in grouped.items():
        b = _breakdown(runs)
        stats[key] = _TaskStats(b.mean, b.pass_rate, b.n == 0)
    return stats


def compare(current: Sequence[TaskResult], previous: Sequence[TaskResult], *, threshold: float = 0.05,
            current_run_id: str | None = None, previous_run_id: str | None = None,
            confidence: float = DEFAULT_CONFIDENCE) -> Comparison:
    """Compare a benchmark run's results with the previous run's.

    Per task ``(task_id, seed_index)``, with its mean score and pass rate over its epochs:

    * **regressed** when it passed every counted epoch before and does not now, when its score
      dropped by more than ``threshold``, or when it was scored before and is UNSCORED now
      (leaving the denominator would hide a drop);
    * **improved** when its score rose by more than ``threshold`` or it passes every epoch now
      and did not before;
    * **new** / **missing** when only one of the runs has it; otherwise **unchanged**.

    The run as a whole is flagged when the current mean score falls below the previous run's
    confidence interval of the mean (``mean_dropped_beyond_ci``; when that interval has zero
    width the drop must also exceed ``threshold``).
    """
    now, before = summarize(current, confidence=confidence), summarize(previous, confidence=confidence)
    now_tasks, before_tasks = _task_stats(current), _task_stats(previous)
    changes = [_task_change(key, now_tasks.get(key), before_tasks.get(key), threshold)
               for key in sorted(now_tasks.keys() | before_tasks.keys())]
    ci = before.mean_score_ci
    return Comparison(
        threshold=threshold,
        previous_run_id=previous_run_id,
        current_run_id=current_run_id,
        current_mean=now.mean_score,
        previous_mean=before.mean_score,
        previous_mean_ci=ci,
        mean_score_delta=_difference(now.mean_score, before.mean_score),
        current_pass_rate=now.pass_rate,
        previous_pass_rate=before.pass_rate,
        pass_rate_delta=_difference(now.pass_rate, before.pass_rate),
        mean_dropped_beyond_ci=_below_interval(now.mean_score, before.mean_score, ci, threshold),
        changes=changes,
    )


def _task_change(key: TaskKey, now: _TaskStats | None, before: _TaskStats | None, threshold: float) -> TaskChange:
    change = TaskChange(task_id=key[0], seed_index=key[1], kind="unchanged",
                        current_score=now.score if now else None, previous_score=before.score if before else None,
                        current_pass_rate=now.pass_rate if now else None,
                        previous_pass_rate=before.pass_rate if before else None)
    if before is None or now is None:
        change.kind = "new" if before is None else "missing"
        return change
    worse, better = _regression_reasons(now, before, threshold), _improvement_reasons(now, before, threshold)
    if worse:
        change.kind, change.reasons = "regressed", worse
    elif better:
        change.kind, change.reasons = "improved", better
    return change


def _regression_reasons(now: _TaskStats, before: _TaskStats, threshold: float) -> list[str]:
    reasons = []
    if before.pass_rate == 1.0 and now.pass_rate != 1.0:
        reasons.append("passed before, does not now" if now.pass_rate is not None else "passed before, unscored now")
    elif now.unscored_only and not before.unscored_only:
        reasons.append("scored before, unscored now")
    if now.score is not None and before.score is not None and before.score - now.score > threshold:
        reasons.append(f"score dropped {before.score:.3f} → {now.score:.3f}")
    return reasons


def _improvement_reasons(now: _TaskStats, before: _TaskStats, threshold: float) -> list[str]:
    reasons = []
    if now.pass_rate == 1.0 and before.pass_rate != 1.0:
        reasons.append("passes now, did not before")
    if now.score is not None and before.score is not None and now.score - before.score > threshold:
        reasons.append(f"score rose {before.score:.3f} → {now.score:.3f}")
    return reasons


def _below_interval(now: float | None, before: float | None, ci: Interval | None, threshold: float) -> bool:
    """Whether the mean fell below the previous interval.

    A zero-width interval (every previous score equal) would flag any drop at all, however
    small, so then the drop must also exceed ``threshold``.
    """
    if now is None or before is None or ci is None or now >= ci.low:
        return False
    return ci.high > ci.low or before - now > threshold


def _difference(now: float | None, before: float | None) -> float | None:
    return None if now is None or before is None else now - before


# -- markdown -----------------------------------------------------------------------------------


def summary_markdown(summary: BenchmarkSummary, comparison: Comparison | None = None,
                     results: Sequence[TaskResult] = (), *, title: str = "Benchmark") -> str:
    """The benchmark's markdown artifact: headline with intervals, counts, breakdowns, tasks.

    Args:
        summary: from :func:`summarize`.
        comparison: from :func:`compare`, when there is a previous run.
        results: the run's results, for the per-task table (the last result of each run key).
        title: the heading (the benchmark's name).
    """
    lines = [f"# {title}", ""] + _headline_lines(summary) + [""] + _count_lines(summary)
    if summary.by_tag:
        lines += ["", "## By tag", "", "| tag | n | mean score | pass rate | unscored |", "|---|---|---|---|---|"]
        lines += [f"| {_cell(tag)} | {b.n} | {_num(b.mean)} | {_pct(b.pass_rate)} | {b.unscored} |"
                  for tag, b in summary.by_tag.items()]
    if summary.by_axis:
        lines += ["", "## By axis", "", "| axis | n | mean score |", "|---|---|---|"]
        lines += [f"| {_cell(axis)} | {b.n} | {_num(b.mean)} |" for axis, b in summary.by_axis.items()]
    if comparison is not None:
        lines += ["", comparison.markdown()]
    if results:
        lines += ["", "## Tasks", ""] + _task_table(latest_per_run_key(results))
    return "\n".join(lines)


def _headline_lines(summary: BenchmarkSummary) -> list[str]:
    mean = _num(summary.mean_score)
    if summary.mean_score_ci:
        ci = summary.mean_score_ci
        mean += f" ({_pct(ci.confidence)} CI {ci.low:.3f}–{ci.high:.3f}, Student t)"
    rate = _pct(summary.pass_rate)
    if summary.pass_rate_ci:
        ci = summary.pass_rate_ci
        rate += f" ({_pct(ci.confidence)} CI {_pct(ci.low)}–{_pct(ci.high)}, Wilson)"
    fraction = f"{summary.counts.passed}/{summary.counts.denominator}"
    lines = [f"**Mean score:** {mean}", "", f"**Pass rate:** {rate} ({fraction})"]
    if summary.k is not None:
        lines += ["", f"**pass@{summary.k}:** {_num(summary.pass_at_k)} · **pass^{summary.k}:** "
                      f"{_num(summary.pass_hat_k)} (over {summary.pass_k_tasks} of {summary.tasks} tasks, "
                      f"{summary.epochs} epoch(s))"]
    return lines


def _count_lines(summary: BenchmarkSummary) -> list[str]:
    c = summary.counts
    return [
        "| outcome | runs |", "|---|---|",
        f"| PASSED | {c.passed} |",
        f"| BELOW_ONE (failed to pass) | {c.below_one} |",
        f"| FAILED (errored, scored 0) | {c.failed} |",
        f"| TIMED_OUT (errored, scored 0) | {c.timed_out} |",
        f"| UNSCORED (not counted) | {c.unscored} |",
        f"| **denominator** | **{c.denominator}** of {c.total} |",
        "",
        f"*{summary.denominator_policy}*",
    ]


def _task_table(runs: Sequence[TaskResult]) -> list[str]:
    lines = ["| task | seed | epoch | score | outcome | duration (s) | links |", "|---|---|---|---|---|---|---|"]
    for run in sorted(runs, key=lambda r: r.run_key):
        seed = _cell(", ".join(f"{k}={v}" for k, v in run.seed.items())) or str(run.seed_index)
        lines.append(f"| {_cell(run.task_id)} | {seed} | {run.epoch} | {_num(run.score)} | {run.outcome.value} | "
                     f"{run.duration_s:.1f} | {_links(run)} |")
    return lines


def _links(run: TaskResult) -> str:
    links = [f"[report]({run.report_url})"] if run.report_url else []
    links += [f"[{_cell(name)}]({url})" for name, url in sorted(run.files.items())]
    return " ".join(links)


def _task_label(task_id: str, seed_index: int) -> str:
    return f"{task_id} [seed {seed_index}]"


def _cell(text: str) -> str:
    """Text safe inside a markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%".replace(".0%", "%")


def _delta(value: float | None, *, percent: bool = False) -> str:
    if value is None:
        return "—"
    return f"{value * 100:+.1f} pt" if percent else f"{value:+.3f}"
