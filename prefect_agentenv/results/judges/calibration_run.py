"""Calibrating a stored benchmark run: what ``prefect-agentenv calibrate`` and the ``calibrate-judges`` flow share.

A calibration reads the label pool (:mod:`~prefect_agentenv.results.judges.label_pool`): every run
graded under one of the run's judge setups, with its labels of that setup's criteria. Looking only
shows; a calibration is recorded (a new version of ``calibration.<fingerprint>``) when labels are
imported or when asked (``record``), so a look never replaces the calibration that holds.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from prefect_agentenv.artifacts import ArtifactBackend, ArtifactError
from prefect_agentenv.results.judges.calibration import (
    CalibrationRecord,
    JudgedCriterion,
    calibrate,
    held_calibration,
    run_judgements,
    save_calibration,
    tie_labels,
)
from prefect_agentenv.results.judges.label_pool import label_pool
from prefect_agentenv.results.judges.label_template import label_template, valid_items
from prefect_agentenv.results.judges.labels import LabelFileError, read_label_file, save_labels
from prefect_agentenv.results.store.run_lookup import FoundRun, find_run
from prefect_agentenv.results.store.scoring_store import read_version

__all__ = ["CalibrationOutcome", "calibrate_run", "run_template"]


class CalibrationOutcome(NamedTuple):
    """What a calibration of a run found, and what it recorded."""

    found: FoundRun
    meant: str
    """The run, said as the reader named it: ``slug/run (the latest finished run of slug)`` for a slug."""
    records: list[CalibrationRecord]
    held: dict[str, tuple[str, CalibrationRecord] | None]
    """Per setup, the calibration that held before, with its version (None: never calibrated)."""
    recorded: dict[str, str]
    """Per setup recorded, the version it was recorded as (empty when only shown)."""
    imported: int = 0
    """Labels imported from the file."""


def _meant(ref: str, found: FoundRun) -> str:
    run = f"{found.slug}/{found.run_id}"
    return run if "/" in ref.strip() or ref.strip() == found.run_id else f"{run} (the latest finished run of {found.slug})"


def calibrate_run(store: ArtifactBackend, ref: str, *, labels: Path | None = None, reviewer: str | None = None,
                  record: bool = False) -> CalibrationOutcome:
    """Store ``labels`` (a new version) when given, then calibrate every judge setup of the run (its shown
    scoring version) against the label pool of its criteria; record each calibration when labels were
    imported or ``record`` asks.

    Raises:
        ArtifactError: the run is not in the store.
        LabelFileError: the label file cannot be read, or names a criterion the run did not judge.
    """
    found = find_run(store, ref)
    judged = run_judgements(store, read_version(store, found.slug, found.run_id))
    imported = 0
    if labels is not None:
        given = read_label_file(labels, reviewer=reviewer)
        try:
            tied = tie_labels(given, judged, labels.name)
        except LabelFileError as exc:
            raise LabelFileError(f"{exc}; this run has {valid_items(judged)}") from None
        save_labels(store, found.slug, found.run_id, tied)
        imported, record = len(tied), True
    records = calibrate_pool(store, judged, benchmark=found.slug, run_id=found.run_id)
    held = {r.fingerprint: held_calibration(store, r.fingerprint) for r in records}
    recorded = {r.fingerprint: save_calibration(store, r) for r in records} if record else {}
    return CalibrationOutcome(found, _meant(ref, found), records, held, recorded, imported)


def calibrate_pool(store: ArtifactBackend, judged: list[JudgedCriterion], *, benchmark: str,
                   run_id: str) -> list[CalibrationRecord]:
    """Each setup of ``judged`` (the named run's) against every run's labels of its criteria, each run
    read in its shown scoring version (its criteria judged under another setup do not count)."""
    setups = {c.setup.fingerprint: c.setup for c in judged}
    pool = label_pool(store, sorted({s.criteria for s in setups.values()}))
    cache: dict[tuple[str, str], list[JudgedCriterion]] = {(benchmark, run_id): judged}

    def judged_of(slug: str, other: str) -> list[JudgedCriterion]:
        if (slug, other) not in cache:
            try:
                cache[slug, other] = run_judgements(store, read_version(store, slug, other))
            except ArtifactError:  # labels of a run whose results are gone: nothing to set them against
                cache[slug, other] = []
        return cache[slug, other]

    return calibrate(list(setups.values()), [(run, judged_of(run.benchmark, run.run_id)) for run in pool],
                     benchmark=benchmark, run_id=run_id)


def run_template(store: ArtifactBackend, ref: str) -> str:
    """The label file to fill for a run: one line per judged criterion (see ``label_template``)."""
    found = find_run(store, ref)
    judged = run_judgements(store, read_version(store, found.slug, found.run_id))
    return label_template(store, found.slug, found.run_id, judged)
