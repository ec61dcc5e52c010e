"""Human labels of rubric criteria: read from a file or a form, kept as versions, never overwritten.

A label says a reviewer's pass or fail (and an optional note) on one criterion of one task run
of a benchmark run: ``(task_id, seed_index, epoch, cell)`` names the task run, ``verifier_id``
and ``criterion_id`` the criterion, and ``criteria_hash`` the criteria as the run was graded
against them (:func:`~prefect_agentenv.grading.judge_setup.criteria_hash`), so a label given on
one wording never counts for another.

Labels of a run are the file artifact ``labels.<slug>.<run_id>`` of the artifact store: every
import publishes a new version holding ``labels.jsonl``, and no version is ever rewritten. A
second reviewer's label on the same criterion is a second label; :func:`reviewer_agreement`
says how often reviewers agree, and :func:`consensus` gives the reference calibration uses.

A label file is JSON lines or CSV with the columns ``task_id, seed_index, epoch, cell,
verifier_id, criterion_id, label, note, reviewer`` (``seed_index``, ``epoch``, ``cell``,
``note`` optional; ``label`` is ``pass`` or ``fail``; ``reviewer`` may come from the command line).
"""

from __future__ import annotations

import csv
import io
import itertools
import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, field_validator

from prefect_agentenv.artifacts import ArtifactBackend, ArtifactMetadata
from prefect_agentenv.exceptions import AgentEnvError
from prefect_agentenv.results.judges.agreement import AgreementStats, agreement_stats
from prefect_agentenv.results.rows import RunKey, StatsModel

__all__ = ["LABELS_FILE", "HumanLabel", "LabelFileError", "LabelItem", "ReviewerAgreement", "consensus",
           "labels_artifact_id", "load_labels", "read_label_file", "reviewer_agreement", "save_labels"]

LABELS_FILE = "labels.jsonl"

LabelItem = tuple[RunKey, str, str]
"""``(task run, verifier id, criterion id)``: what a label is about."""


class LabelFileError(AgentEnvError, ValueError):
    """A label file that cannot be read; the message names the file, the line and the field."""


class HumanLabel(StatsModel):
    """One reviewer's verdict on one criterion of one task run."""

    task_id: str = Field(min_length=1)
    seed_index: int = Field(default=0, ge=0)
    epoch: int = Field(default=0, ge=0)
    cell: str | None = None
    """The sweep cell of the task run (``None`` outside a sweep)."""
    verifier_id: str = Field(min_length=1)
    criterion_id: str = Field(min_length=1)
    label: Literal["pass", "fail"]
    """The reviewer's verdict: the criterion is met (``pass``) or not (``fail``)."""
    note: str | None = None
    """Why, in the reviewer's words."""
    reviewer: str = Field(min_length=1)
    """Who labelled."""
    criteria_hash: str | None = None
    """Hash of the criteria the run was graded against; filled in from the run when imported."""
    labelled_at: str | None = None
    source: Literal["file", "ui"] = "file"
    """Where the label was given: a label file or the labelling flow's form."""

    @field_validator("label", mode="before")
    @classmethod
    def _words(cls, value: object) -> object:
        if isinstance(value, bool):
            return "pass" if value else "fail"
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("cell", "note", mode="before")
    @classmethod
    def _blank_is_none(cls, value: object) -> object:
        return None if value == "" else value

    @property
    def item(self) -> LabelItem:
        return RunKey(self.task_id, self.seed_index, self.epoch, self.cell), self.verifier_id, self.criterion_id

    @property
    def passed(self) -> bool:
        return self.label == "pass"


def read_label_file(path: Path, *, reviewer: str | None = None) -> list[HumanLabel]:
    """Labels from ``labels.jsonl`` (one object a line) or a ``.csv`` with a header row.

    Raises:
        LabelFileError: the file is missing, empty, or a line is not a valid label.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise LabelFileError(f"{path.name}: cannot be read: {exc.strerror}") from None
    if path.suffix.lower() == ".csv":
        records = [(n, dict(row)) for n, row in enumerate(csv.DictReader(io.StringIO(text)), start=2)]
    else:
        records = []
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise LabelFileError(f"{path.name} line {n}: not JSON ({exc.msg})") from None
            if not isinstance(value, dict):
                raise LabelFileError(f"{path.name} line {n}: not a JSON object")
            records.append((n, value))
    # A template's line still to fill (``label`` empty) is no label yet: skipped, not refused.
    labels = [_label(path.name, n, record, reviewer) for n, record in records if _filled(record)]
    if not labels:
        raise LabelFileError(f"{path.name}: holds no label" + (
            f" ({len(records)} lines with an empty `label`: fill each with pass or fail)" if records else ""))
    return labels


def _filled(record: dict[str, object]) -> bool:
    label = record.get("label")
    return not (label is None or (isinstance(label, str) and not label.strip()))


def _label(file: str, line: int, record: dict[str, object], reviewer: str | None) -> HumanLabel:
    data = {k: v for k, v in record.items() if k is not None and v not in (None, "")}  # a blank CSV cell: not given
    if reviewer and not data.get("reviewer"):
        data["reviewer"] = reviewer
    data.setdefault("labelled_at", datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    try:
        return HumanLabel.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "line"
        hint = " (or pass --reviewer NAME)" if field == "reviewer" and first["type"] == "missing" else ""
        raise LabelFileError(f"{file} line {line}: {field}: {first['msg']}{hint}") from None


def labels_artifact_id(slug: str, run_id: str) -> str:
    """The file artifact a run's labels are versions of."""
    return f"labels.{slug}.{run_id}"


def save_labels(store: ArtifactBackend, slug: str, run_id: str, labels: Sequence[HumanLabel]) -> ArtifactMetadata:
    """Publish ``labels`` as the next version of the run's labels (earlier versions stay as they are)."""
    body = "".join(label.model_dump_json(exclude_none=True) + "\n" for label in labels)
    return store.publish_files(labels_artifact_id(slug, run_id), {LABELS_FILE: body.encode()})


def load_labels(store: ArtifactBackend, slug: str, run_id: str) -> list[HumanLabel]:
    """Every label of the run, from every version, oldest first."""
    labels: list[HumanLabel] = []
    for meta in store.list_versions(labels_artifact_id(slug, run_id)):
        text = store.read_file(meta, LABELS_FILE).decode()
        labels += [HumanLabel.model_validate_json(line) for line in text.splitlines() if line.strip()]
    return labels


def latest_per_reviewer(labels: Iterable[HumanLabel]) -> dict[LabelItem, dict[str, HumanLabel]]:
    """Each item's labels, one per reviewer: a reviewer who labelled an item again meant the later one."""
    out: dict[LabelItem, dict[str, HumanLabel]] = defaultdict(dict)
    for label in labels:
        out[label.item][label.reviewer] = label
    return out


def consensus(labels: Iterable[HumanLabel]) -> tuple[dict[LabelItem, HumanLabel], int]:
    """The reference label of each item (the reviewers' majority), and how many items were tied
    between reviewers and left out."""
    reference: dict[LabelItem, HumanLabel] = {}
    tied = 0
    for item, by_reviewer in latest_per_reviewer(labels).items():
        passes = sum(1 for label in by_reviewer.values() if label.passed)
        fails = len(by_reviewer) - passes
        if passes == fails:
            tied += 1
            continue
        verdict = passes > fails
        reference[item] = next(label for label in by_reviewer.values() if label.passed == verdict)
    return reference, tied


class ReviewerAgreement(StatsModel):
    """How often reviewers agree with each other, over the items two or more of them labelled."""

    reviewers: list[str]
    items: int
    """Items labelled by two reviewers or more."""
    pairs: AgreementStats | None
    """Every pair of reviewers' labels on an item, as (one, other): agreement and κ (TPR/TNR read
    as one reviewer against the other)."""


def reviewer_agreement(*groups: Iterable[HumanLabel]) -> ReviewerAgreement:
    """Agreement between reviewers: pooled over every pair of distinct reviewers on every shared item.

    Each group is one run's labels: items of different runs are different items, even with the same key."""
    pairs: list[tuple[bool | None, bool]] = []
    shared = 0
    reviewers: set[str] = set()
    for labels in groups:
        for by_reviewer in latest_per_reviewer(labels).values():
            reviewers.update(by_reviewer)
            if len(by_reviewer) < 2:
                continue
            shared += 1
            ordered = [by_reviewer[r] for r in sorted(by_reviewer)]
            pairs += [(a.passed, b.passed) for a, b in itertools.combinations(ordered, 2)]
    return ReviewerAgreement(reviewers=sorted(reviewers), items=shared, pairs=agreement_stats(pairs) if pairs else None)
