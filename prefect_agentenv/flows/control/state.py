"""What an operator asks of a running benchmark, and what its dispatcher says back: two Prefect Variables.

* ``agentenv-control-<run id>`` — the **control** Variable, written by ``prefect-agentenv control``
  and editable in the Prefect UI (Variables page): paused or not, the live concurrency, the
  model-call limits of task runs still to start, the budget, the time limit, and one-off
  requests (requeue, cancel). The dispatcher reads it about once a second and never writes it.
* ``agentenv-status-<run id>`` — the **status** Variable, written only by the dispatcher: what is
  in effect, the task runs running, queued, done and errored, the requests it has applied, and
  where the run's results are. ``control status`` reads it; so does the CLI looking a run up by slug.

One writer each, so neither side overwrites the other's edit. When the run ends its control
Variable is deleted and its status Variable marked ``finished``, until the benchmark's next run. Why Variables, and not
``send_input`` or a control deployment: docs/controlling-a-run.md.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

CONTROL_PREFIX = "agentenv-control-"
STATUS_PREFIX = "agentenv-status-"
STORE_LABEL = "agentenv.store"
"""The benchmark flow run's label naming its results' store: ``block:NAME`` or ``local:PATH``."""
RESULTS_LABEL = "agentenv.results"
"""The benchmark flow run's label holding the URL of its ``results.jsonl``."""
UI = "the Prefect UI"
"""Who made a change that came with no new ``stamp``: an edit of the Variable in the browser."""

LIMIT_KEYS = ("limit_tokens", "limit_output_tokens", "limit_cost_usd", "limit_model_calls", "limit_seconds")
"""The per-task-run model-call limits ``control set`` takes (the run overrides of the same names)."""
SETTINGS = ("paused", "hold_model_calls", "concurrency", "timeout_seconds", "budget_usd", "budget_tokens",
            *LIMIT_KEYS)
"""The settings of :class:`ControlState`, in the order changes are applied and shown."""


def variable_suffix(run_id: str) -> str:
    """The run id as a Variable name takes it (lowercase letters, digits, ``-`` and ``_``)."""
    return re.sub(r"[^a-z0-9_-]", "-", run_id.lower())[:200]


def control_variable(run_id: str) -> str:
    return CONTROL_PREFIX + variable_suffix(run_id)


def status_variable(run_id: str) -> str:
    return STATUS_PREFIX + variable_suffix(run_id)


class ControlRequest(BaseModel):
    """A one-off request: put task runs back in the queue, or cancel one. Applied once (by ``id``)."""

    model_config = ConfigDict(extra="ignore")

    id: str
    action: Literal["requeue", "cancel"]
    errored: bool = False
    """requeue: every task run whose last result errored (FAILED, TIMED_OUT, crashed, cancelled)."""
    infrastructure: bool = False
    """requeue: every task run whose last result failed for infrastructure."""
    tasks: list[str] = Field(default_factory=list)
    """requeue: these task runs (task id, ``task/epoch`` or a run name); cancel: the one task run."""
    by: str = UI
    reason: str | None = None


class ControlState(BaseModel):
    """The control Variable's value. Members an operator may edit; the rest say which run it is."""

    model_config = ConfigDict(extra="ignore")

    run_id: str
    slug: str
    flow_run_id: str | None = None
    paused: bool = False
    """No task run starts while true; the running ones finish."""
    hold_model_calls: bool = False
    """Agents' next model calls wait in the gateway while true (``pause --now``)."""
    concurrency: int = Field(default=1, ge=1)
    timeout_seconds: float | None = Field(default=None, gt=0)
    """The time limit of each task run (``None``: each task's own); applies to the ones running too."""
    budget_usd: float | None = Field(default=None, gt=0)
    budget_tokens: int | None = Field(default=None, gt=0)
    limit_tokens: int | None = Field(default=None, gt=0)
    limit_output_tokens: int | None = Field(default=None, gt=0)
    limit_cost_usd: float | None = Field(default=None, gt=0)
    limit_model_calls: int | None = Field(default=None, gt=0)
    limit_seconds: float | None = Field(default=None, gt=0)
    requests: list[ControlRequest] = Field(default_factory=list)
    reason: str | None = None
    """Why the last change was made."""
    changed_by: str | None = None
    """Who made the last change from the CLI (``user@host``)."""
    stamp: str | None = None
    """A new value with every CLI change: a change without a new stamp came from the UI."""

    def settings(self) -> dict[str, Any]:
        """The settings an operator may change, by name, as JSON values."""
        return self.model_dump(mode="json", include=set(SETTINGS))



class RunStatus(BaseModel):
    """The status Variable's value: what the dispatcher has in effect and how far the run is."""

    model_config = ConfigDict(extra="ignore")

    run_id: str
    slug: str
    flow_run_id: str | None = None
    state: Literal["running", "finished"] = "running"
    applied: dict[str, object] = Field(default_factory=dict)
    """Each setting of :class:`ControlState` as the dispatcher applies it now."""
    counts: dict[str, int] = Field(default_factory=dict)
    """``total``, ``running``, ``queued``, ``done``, ``errored``, ``held_calls``."""
    running: list[str] = Field(default_factory=list)
    """The names of the task runs in flight (what ``control cancel`` takes)."""
    applied_requests: dict[str, str] = Field(default_factory=dict)
    """Request id → what came of it (``requeued 3 task runs``, ``refused: …``)."""
    results_url: str | None = None
    """Where the run's results are (its store's URL of ``results.jsonl``)."""
    store: str | None = None
    """The artifact store the run writes to (the block's name, or the local folder)."""
    updated_at: str | None = None
