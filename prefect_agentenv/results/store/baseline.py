"""The run a benchmark run is compared with: the one named (``baseline``), else the previous
finished run of its slug; the paired comparison with it, and the gate's settings."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from prefect_agentenv.artifacts import ArtifactNotFoundError
from prefect_agentenv.exceptions import ArtifactError
from prefect_agentenv.results import DEFAULT_CONFIDENCE, Comparison, TaskResult, compare
from prefect_agentenv.results.store.run_lookup import FoundRun, find_run
from prefect_agentenv.results.store.run_store import ResultsStore, RunEntry
from prefect_agentenv.results.store.scoring_store import read_version


@dataclass(frozen=True)
class Gate:
    """What a benchmark run is compared with, how, and what fails it (the flow's parameters)."""

    baseline: str | None = None
    confidence: float = DEFAULT_CONFIDENCE
    fail_under: float | None = None
    fail_on_regression: bool = False
    require_calibrated_judge: float | None = None
    """The κ every rubric score's judge setup must be calibrated to; None: not required."""


def find_baseline(run: ResultsStore, ref: str | None) -> FoundRun | None:
    """The named baseline of ``run``, looked up before anything runs (``None`` when none is named).

    Raises:
        ArtifactError: the store has no such run (``ArtifactNotFoundError``), or it is ``run`` itself;
            the message begins ``baseline:``.
    """
    if ref is None:
        return None
    try:
        found = find_run(run.store, ref, slug=run.slug)
    except ArtifactNotFoundError as exc:
        raise ArtifactNotFoundError(f"baseline: {exc}") from None
    if (found.slug, found.run_id) == (run.slug, run.run_id):
        raise ArtifactError(f"baseline: run {run.run_id} cannot be its own baseline")
    return found


def compare_with_baseline(run: ResultsStore, results: Sequence[TaskResult], baseline: FoundRun | None, *,
                          confidence: float = DEFAULT_CONFIDENCE) -> tuple[Comparison | None, RunEntry | None]:
    """``results`` (the run's) compared pair by pair with the baseline's, and the baseline's index
    entry (``None, None`` without a baseline).

    The baseline is named ``<run id>`` when it is of the same benchmark, ``<slug>/<run id>`` otherwise.
    """
    found = baseline_results(run, baseline)
    if found is None:
        return None, None
    before, label, entry = found
    return compare(results, before, confidence=confidence, current_run_id=run.run_id, previous_run_id=label), entry


BaselineResults = tuple[list[TaskResult], str, RunEntry | None]
"""A baseline run's results, how a comparison names it, and its index entry."""


def baseline_results(run: ResultsStore, baseline: FoundRun | None) -> BaselineResults | None:
    """The baseline's results, how a comparison names it, and its index entry: the run named, else
    the previous finished run of ``run``'s slug (``None`` when there is none)."""
    if baseline is not None:
        slug, baseline_id, entry = baseline.slug, baseline.run_id, baseline.entry
    else:
        previous = run.previous_run()
        if previous is None:
            return None
        slug, baseline_id, entry = run.slug, previous.run_id, previous
    label = baseline_id if slug == run.slug else f"{slug}/{baseline_id}"
    # the scoring its summary shows (the newest rescore)
    return read_version(run.store, slug, baseline_id), label, entry
