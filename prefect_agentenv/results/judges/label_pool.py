"""The labels a judge setup is calibrated on: every stored label of its criteria, across runs.

Labels belong to task runs (``labels.<slug>.<run id>``, :mod:`~prefect_agentenv.results.judges.labels`);
a calibration belongs to a judge setup. So a setup's calibration reads the **pool**: every run's
labels whose criteria hash is the setup's, each reviewer's latest label per item, the reviewers'
majority per item. Importing labels on one more run adds to the pool; it never replaces what other
runs hold. :class:`LabelSource` is one run's share, kept with the calibration record so a reader
sees what a calibration rests on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from prefect_agentenv.artifacts import ArtifactBackend
from prefect_agentenv.results.judges.labels import LABELS_FILE, HumanLabel, labels_artifact_id
from prefect_agentenv.results.rows import StatsModel

__all__ = ["LabelSource", "RunLabels", "label_pool", "labelled_runs", "load_run_labels", "plural", "where_labels_are"]

_PREFIX = "labels."


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``1 label``, ``2 labels``: a count with its noun in the right number."""
    return f"{count} {noun if count == 1 else many or noun + 's'}"


class LabelSource(StatsModel):
    """One run's share of the labels a calibration rests on."""

    benchmark: str
    run_id: str
    versions: list[str]
    """The versions of the run's labels artifact that hold labels of these criteria."""
    labels: int
    """Labels of these criteria stored on the run (every reviewer, every version)."""
    used: int = 0
    """Reference labels (one per item: the reviewers' majority) set against a judged criterion of the setup."""

    @property
    def run(self) -> str:
        return f"{self.benchmark}/{self.run_id}"


@dataclass(frozen=True)
class RunLabels:
    """Every label stored on one run, with the versions of its labels artifact that hold each."""

    benchmark: str
    run_id: str
    labels: list[tuple[str, HumanLabel]]
    """``(artifact version, label)``, oldest first."""
    since: datetime | None = None
    """When its first labels were stored: a pool lists runs in the order they were labelled."""

    def of_criteria(self, criteria_hash: str) -> list[HumanLabel]:
        return [label for _, label in self.labels if label.criteria_hash == criteria_hash]

    def source(self, criteria_hash: str, used: int = 0) -> LabelSource:
        versions = sorted({v for v, label in self.labels if label.criteria_hash == criteria_hash}, key=_version_key)
        return LabelSource(benchmark=self.benchmark, run_id=self.run_id, versions=versions,
                           labels=len(self.of_criteria(criteria_hash)), used=used)


def _version_key(version: str) -> tuple[int, str]:
    return (int(version), "") if version.isdigit() else (1 << 62, version)


def labelled_runs(store: ArtifactBackend) -> list[tuple[str, str]]:
    """``(slug, run id)`` of every run with stored labels (a slug holds no dot, so the id splits after it)."""
    runs = []
    for artifact_id in store.list_ids():
        if artifact_id.startswith(_PREFIX):
            slug, _, run_id = artifact_id[len(_PREFIX):].partition(".")
            if slug and run_id:
                runs.append((slug, run_id))
    return runs


def load_run_labels(store: ArtifactBackend, slug: str, run_id: str) -> RunLabels:
    """Every label of one run, from every version of its labels artifact, oldest first."""
    labels: list[tuple[str, HumanLabel]] = []
    versions = store.list_versions(labels_artifact_id(slug, run_id))
    for meta in versions:
        text = store.read_file(meta, LABELS_FILE).decode()
        labels += [(meta.version, HumanLabel.model_validate_json(line)) for line in text.splitlines() if line.strip()]
    return RunLabels(slug, run_id, labels, versions[0].created_at if versions else None)


def label_pool(store: ArtifactBackend, criteria_hashes: Sequence[str]) -> list[RunLabels]:
    """The runs holding labels of any of these criteria hashes (each with all its labels), in the order
    they were first labelled."""
    wanted = set(criteria_hashes)
    pool = []
    for slug, run_id in labelled_runs(store):
        run = load_run_labels(store, slug, run_id)
        if any(label.criteria_hash in wanted for _, label in run.labels):
            pool.append(run)
    return sorted(pool, key=lambda run: (run.since or datetime.min.replace(tzinfo=UTC), run.benchmark, run.run_id))


def where_labels_are(sources: Sequence[LabelSource]) -> str:
    """``labels: 8 on run reply/A, 1 on run reply/C`` (``labels: none`` when no run holds one)."""
    if not sources:
        return "labels: none"
    return "labels: " + ", ".join(f"{s.labels} on run {s.run}" for s in sources)
