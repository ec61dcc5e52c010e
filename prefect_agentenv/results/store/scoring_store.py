"""Reading and writing a benchmark run's scoring versions (their layout: ``scoring_versions``)."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError

from prefect_agentenv.artifacts import ArtifactBackend, ArtifactIntegrityError, ArtifactNotFoundError
from prefect_agentenv.results import TaskResult
from prefect_agentenv.results.store.run_store import RESULTS_FILE, ResultsStore, RunEntry, read_results
from prefect_agentenv.results.store.scoring_versions import ScoringVersion, version_folder


def read_version(store: ArtifactBackend, slug: str, run_id: str, number: int | None = None) -> list[TaskResult]:
    """The results of one scoring version of a run (``None``: the version its summary shows).

    Raises:
        ArtifactNotFoundError: the run has no such version.
        ArtifactIntegrityError: a line is not a valid result.
    """
    entry = ResultsStore(store, slug, run_id).own_entry()
    number = number or (entry.shown_scoring if entry else None) or 1
    if number == 1:
        return read_results(store, slug, run_id)
    version = next((v for v in (entry.scorings if entry else []) if v.number == number), None)
    if version is None:
        raise ArtifactNotFoundError(f"benchmark run {slug}/{run_id} has no scoring version {number}")
    return _parse_results(store, version.results)


def _parse_results(store: ArtifactBackend, key: str) -> list[TaskResult]:
    raw = store.get_object(key)
    try:
        return [TaskResult.model_validate_json(line) for line in raw.decode().splitlines() if line.strip()]
    except ValidationError as exc:
        raise ArtifactIntegrityError(f"{store.object_url(key)} is not a valid results file: {exc}") from exc


def write_scoring(results: ResultsStore, version: ScoringVersion, lines: Sequence[TaskResult]) -> RunEntry:
    """Write a rescore's results file and list the version in the run's entry, shown from now on;
    the run's own scoring is listed as version 1 the first time."""
    key = f"{version_folder(results.folder, version.number)}/{RESULTS_FILE}"
    results.store.put_object(key, "".join(line.model_dump_json() + "\n" for line in lines))
    entry = results.own_entry() or RunEntry(run_id=results.run_id, started_at=version.created_at)
    listed = entry.scorings or [ScoringVersion(number=1, created_at=entry.finished_at or entry.started_at,
                                               results=results.results_key, headline=entry.headline,
                                               rescored=len(results.read_results()))]
    listed = [*listed, version.model_copy(update={"results": key})]
    return results.save_entry(entry.model_copy(update={"scorings": listed, "shown_scoring": version.number,
                                                       "headline": version.headline}))


def next_scoring(results: ResultsStore) -> int:
    """The number the next rescore of the run gets."""
    entry = results.own_entry()
    return max([v.number for v in entry.scorings] if entry and entry.scorings else [1]) + 1
