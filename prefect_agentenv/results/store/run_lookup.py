"""Naming a benchmark run on the command line or in a deployment: ``<slug>/<run id>``, ``<slug>``
(its latest finished run), ``<slug>/latest``, or a bare run id (looked for in every slug's runs)."""

from __future__ import annotations

from typing import NamedTuple

from prefect_agentenv.artifacts import ArtifactBackend, ArtifactNotFoundError
from prefect_agentenv.artifacts.keys import UnsafeKeyError, check_segment
from prefect_agentenv.results.store.run_store import BENCHMARKS_FOLDER, RUN_ENTRY, RunEntry, list_runs

LATEST = "latest"


class FoundRun(NamedTuple):
    """A run found in the store: its benchmark's slug, its id and its index entry."""

    slug: str
    run_id: str
    entry: RunEntry | None
    """``None`` when the run has results but no entry in its slug's index."""


def find_run(store: ArtifactBackend, ref: str, *, slug: str | None = None) -> FoundRun:
    """The run ``ref`` names; a bare run id is looked for in ``slug`` first, then in every slug.

    Raises:
        ArtifactNotFoundError: no such run (the message says where it was looked for).
    """
    ref = ref.strip()
    named_slug, sep, run_id = ref.partition("/")
    try:
        if sep:
            return _in_slug(store, check_segment(named_slug, "benchmark slug"), run_id or LATEST)
        if ref != LATEST and list_runs(store, check_segment(ref, "benchmark slug")):
            return _in_slug(store, ref, LATEST)
        if ref == LATEST and slug:
            return _in_slug(store, slug, LATEST)
        check_segment(ref, "benchmark run id")
    except UnsafeKeyError as exc:
        raise ArtifactNotFoundError(f"{ref!r} names no benchmark run: {exc}") from None
    if slug and any(run.run_id == ref for run in list_runs(store, slug)):
        return _in_slug(store, slug, ref)
    owners = sorted({key.split("/")[1] for key in store.list_objects(BENCHMARKS_FOLDER)
                     if key.endswith(f"/{ref}/{RUN_ENTRY}") and key.count("/") == 3})
    if len(owners) > 1:
        raise ArtifactNotFoundError(f"run {ref!r} is a run of several benchmarks ({', '.join(owners)}): "
                                    f"name it as <slug>/{ref}")
    if not owners:
        raise ArtifactNotFoundError(f"no benchmark run {ref!r} in {store.location} (give <slug>/<run id>, "
                                    "or a slug for its latest finished run)")
    return _in_slug(store, owners[0], ref)


def _in_slug(store: ArtifactBackend, slug: str, run_id: str) -> FoundRun:
    runs = list_runs(store, slug)
    if run_id == LATEST:
        finished = [run for run in runs if run.finished_at is not None]
        if not finished:
            raise ArtifactNotFoundError(f"benchmark {slug!r} has no finished run in {store.location}")
        return FoundRun(slug, finished[-1].run_id, finished[-1])
    check_segment(run_id, "benchmark run id")
    entry = next((run for run in runs if run.run_id == run_id), None)
    if entry is None and not store.list_objects(f"{BENCHMARKS_FOLDER}/{slug}/{run_id}"):
        raise ArtifactNotFoundError(f"benchmark {slug!r} has no run {run_id!r} in {store.location}")
    return FoundRun(slug, run_id, entry)
