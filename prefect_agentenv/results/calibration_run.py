"""Calibrating a stored benchmark run: what ``prefect-agentenv calibrate`` and the ``calibrate-judges`` flow share."""

from __future__ import annotations

from pathlib import Path

from prefect_agentenv.artifacts import ArtifactBackend
from prefect_agentenv.results.calibration import (
    CalibrationRecord,
    calibrate,
    run_judgements,
    save_calibration,
    tie_labels,
)
from prefect_agentenv.results.labels import load_labels, read_label_file, save_labels
from prefect_agentenv.results.run_lookup import FoundRun, find_run
from prefect_agentenv.results.scoring_store import read_version

__all__ = ["calibrate_run"]


def calibrate_run(store: ArtifactBackend, ref: str, *, labels: Path | None = None,
                  reviewer: str | None = None) -> tuple[FoundRun, list[CalibrationRecord]]:
    """Store ``labels`` (a new version) when given, then calibrate every judge setup of the run
    (its shown scoring version) against all its labels and record each calibration.

    Raises:
        ArtifactError: the run is not in the store.
        LabelFileError: the label file cannot be read, or names a criterion the run did not judge.
    """
    found = find_run(store, ref)
    judged = run_judgements(store, read_version(store, found.slug, found.run_id))
    if labels is not None:
        given = read_label_file(labels, reviewer=reviewer)
        save_labels(store, found.slug, found.run_id, tie_labels(given, judged, labels.name))
    records = calibrate(judged, load_labels(store, found.slug, found.run_id), benchmark=found.slug,
                        run_id=found.run_id)
    for record in records:
        save_calibration(store, record)
    return found, records
