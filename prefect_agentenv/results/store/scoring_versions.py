"""Scoring versions of a benchmark run: its own results, then one results file per rescore.

A run's own scoring is version 1, its ``results.jsonl``. Each ``rescore`` of the run writes
version 2, 3, … beside it and lists it in the run's entry (``run.json`` and the runs index)::

    benchmarks/<slug>/<run_id>/scoring/<n>/results.jsonl     one TaskResult per rescored task run
    benchmarks/<slug>/<run_id>/scoring/<n>/reports/<key>-epoch<e>.json   the rescoring's reports

No version replaces another. The entry's ``shown_scoring`` is the version the run's summary
(its headline in the index, ``compare``) reads: the newest, since a rescore is asked for to
see the current verifiers' verdict; version 1 stays readable with :func:`read_version`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from prefect_agentenv.attribute_docs import attribute_docstrings
from prefect_agentenv.results import Headline

SCORING_FOLDER = "scoring"


class ScoringVersion(BaseModel):
    """One scoring of a benchmark run's task runs, as listed in its ``run.json``."""

    model_config = ConfigDict(json_schema_extra=attribute_docstrings)

    number: int = Field(ge=1)
    """1 is the run's own scoring; each rescore adds the next number."""
    created_at: str
    """When the scoring finished (ISO 8601, UTC)."""
    documents: Literal["run", "frozen", "task", "benchmark"] = "run"
    """Which task documents' verifiers scored: the run itself (1), the run's frozen copies, a
    ``--task`` document, or a ``--benchmark`` file's tasks."""
    source: str | None = None
    """The ``--task`` or ``--benchmark`` file named, when one was."""
    documents_sha256: dict[str, str] = Field(default_factory=dict)
    """The sha256 of the canonical JSON of each task document used, by task key."""
    results: str
    """The results file's key in the store."""
    rescored: int = 0
    """How many task runs this version scored again (every one of the run's for version 1)."""
    missing: list[str] = Field(default_factory=list)
    """Task runs this version could not score, each with the reason (no submission, no document)."""
    headline: Headline | None = None
    """The version's headline numbers."""


def version_folder(run_folder: str, number: int) -> str:
    """Where rescore ``number`` (2 or more) keeps its results and reports."""
    return f"{run_folder}/{SCORING_FOLDER}/{number}"
