"""What the HTML report shows: a typed view of a benchmark run (or of one task run).

The viewer renders these and reads nothing else; gathering them from the artifact store is
:mod:`prefect_agentenv.flows.ui.view_data`, so the rendering stays pure and testable.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from prefect_agentenv.attribute_docs import attribute_docstrings
from prefect_agentenv.results import BenchmarkSummary, SweepSummary, cell_suffix
from prefect_agentenv.results.control_log import ControlChange
from prefect_agentenv.transcript.models import Transcript


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=attribute_docstrings)


class TaskRow(_Model):
    """One task run of the report: a row of the table and a drill-down page."""

    task_id: str
    seed_index: int = 0
    epoch: int = 0
    cell: str | None = None
    """The sweep cell the run belongs to (``None`` outside a sweep)."""
    tags: list[str] = Field(default_factory=list)
    outcome: str
    score: float | None = None
    duration_s: float = 0.0
    error: str | None = None
    flow_run_id: str | None = None
    task_run_id: str | None = None
    """Set when the run was a task run of the benchmark's flow run: its page is the one to open."""
    report_url: str | None = None
    transcript: Transcript | None = None
    judges: list[str] = Field(default_factory=list)
    """Each rubric score's judge trust, ``verifier: calibrated κ 0.72 (40 labels)`` or ``verifier: uncalibrated``."""

    @property
    def prefect_path(self) -> str | None:
        """The run's page under the Prefect UI's address."""
        if self.task_run_id:
            return f"runs/task-run/{self.task_run_id}"
        return f"runs/flow-run/{self.flow_run_id}" if self.flow_run_id else None

    @property
    def page(self) -> str:
        """The drill-down page's file name (stable: the same run key gives the same name)."""
        stem = re.sub(r"[^A-Za-z0-9._-]+", "-", self.task_id).strip("-.") or "task"
        return f"runs/{stem}.seed{self.seed_index}.epoch{self.epoch}{cell_suffix(self.cell)}.html"


class ScoreBar(_Model):
    """A mean score with its confidence interval, for one tag or one axis."""

    kind: Literal["tag", "axis"]
    label: str
    mean: float
    low: float | None = None
    high: float | None = None
    n: int


class TrendPoint(_Model):
    """One finished run of the benchmark, for the trend chart."""

    run_id: str
    started_at: str
    mean_score: float | None = None
    pass_rate: float | None = None
    regression: bool = False
    """The paired comparison with that run's baseline found a regression (in this cell)."""
    current: bool = False
    cell: str | None = None
    """The sweep cell the point is of (``None``: a run that was no sweep)."""


class ReportView(_Model):
    """Everything the HTML report shows."""

    kind: Literal["benchmark", "task"]
    title: str
    slug: str | None = None
    run_id: str | None = None
    generated_at: str
    headline: str
    summary: BenchmarkSummary | None = None
    sweep: SweepSummary | None = None
    """A sweep's cells and every two of them compared (``None`` outside a sweep)."""
    rows: list[TaskRow] = Field(default_factory=list)
    bars: list[ScoreBar] = Field(default_factory=list)
    trend: list[TrendPoint] = Field(default_factory=list)
    regressions: list[str] = Field(default_factory=list)
    """What the paired comparison with the run's baseline marked worse (the summary's regressions)."""
    prefect_ui_url: str | None = None
    """Base URL of the Prefect UI, to link each task run's flow run."""
    changes: list[ControlChange] = Field(default_factory=list)
    """What operators changed while the run ran (``control``: pause, concurrency, requeue…)."""
    attachments: dict[str, str] = Field(default_factory=dict)
    """Stored URL → path inside the report folder, for records copied next to the pages."""
