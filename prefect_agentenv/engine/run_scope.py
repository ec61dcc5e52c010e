"""The run scope: how every path creates a run's resources, binds them, and tears them down.

A flow run of a task document, the reusable step tasks (``agentenv_run``), an ``AgentSession``
and each attempt of isolated scoring all open their run with :func:`open_run` (or
:func:`open_scoring_run`) and use it as an async context manager::

    async with open_run("my-task") as run:      # the RunResources, bound as the current run
        ctx = await execute_step(step, [ctx])
    # everything the steps started is stopped here, however the block ended

Entering creates the run's folder (and, for a run that writes a report, its ``owner.json``,
which the next start's sweep reads), binds the run, so steps reach it through ``current_run()``,
and keeps the secret values its steps resolve out of every log line. Leaving stops everything
registered for teardown — bounded in time, shielded from a cancellation so a second Ctrl-C
cannot leave a process half-stopped — keeps the records in :attr:`RunScope.teardown` for the
report, and unbinds the run.

It lives in the engine, beside :func:`~prefect_agentenv.engine.execute.execute_step`:
``runtime`` holds the parts (``RunResources``, ``bind_run``, the teardown registry) that steps
use, and this module is the one place they are put together. ``tasks`` and ``session`` are at
the flows layer and ``api`` above it, so every caller imports it without pointing up. Nothing
here needs a flow run or the Prefect API: a session in a notebook opens its run the same way.
"""

from __future__ import annotations

import asyncio
import contextvars
import uuid
from contextlib import ExitStack
from dataclasses import dataclass, field
from types import TracebackType

from prefect_agentenv.redaction import redacting_logs
from prefect_agentenv.runtime.resources.leftovers import write_owner
from prefect_agentenv.runtime.resources.overrides import RunOverrides
from prefect_agentenv.runtime.resources.run import RunResources, bind_run, unbind_run
from prefect_agentenv.runtime.resources.teardown import TeardownRecord, TeardownRegistry
from prefect_agentenv.settings import get_settings


@dataclass
class RunScope:
    """One run's resources from creation to teardown; ``async with`` it (see the module docstring).

    The run exists (and can be read) before the scope is entered; nothing is bound or created
    on disk until then. Closing twice is harmless.
    """

    run: RunResources
    owner: bool = False
    """Write ``owner.json`` on entry: the run writes a report, and a sweep may find it dead."""
    flow_run_id: str | None = None
    """The Prefect flow run the owner record names."""
    parent: RunResources | None = None
    """The run a scoring run scores: it learns at exit that steps ran without Prefect."""
    teardown: list[TeardownRecord] = field(default_factory=list)
    """What the teardown at exit stopped, and how (empty until the scope is left)."""
    _token: contextvars.Token[RunResources | None] | None = None
    _logs: ExitStack = field(default_factory=ExitStack)

    async def __aenter__(self) -> RunResources:
        self.run.workdir.mkdir(parents=True, exist_ok=True)
        if self.owner:
            write_owner(self.run.workdir, run_id=self.run.run_id, flow_run_id=self.flow_run_id, keep=self.run.keep)
        self._logs.enter_context(redacting_logs(self.run.redact))
        self._token = bind_run(self.run)
        return self.run

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    async def close(self) -> list[TeardownRecord]:
        """Stop everything the run started, then unbind it (a no-op when not open)."""
        token, self._token = self._token, None
        if token is None:
            return self.teardown
        try:
            self.teardown = await asyncio.shield(
                self.run.teardown.stop_all(get_settings().teardown_timeout_seconds))
        finally:
            unbind_run(token)
            self._logs.close()
            parent = self.parent
            if parent is not None and self.run.services.without_prefect and not parent.services.without_prefect:
                parent.services.without_prefect = self.run.services.without_prefect  # its report must say so
        return self.teardown


def open_run(task_id: str, *, run_id: str | None = None, keep: bool = False, overrides: RunOverrides | None = None,
             owner: bool = False, flow_run_id: str | None = None) -> RunScope:
    """A run of its own in ``<runs dir>/<run id>``.

    Args:
        task_id: names the run's files (the task document's id, ``session``, a flow's name).
        run_id: the run's id (the flow run id when there is one); a fresh one when omitted.
        keep: keep agent sandboxes after the run.
        overrides: per-run overrides (``a2a_agent_id``, ``judge_model``, …), already parsed.
        owner: record the owning process (``owner.json``) for the sweep: only for a run that
            writes ``report.json`` when it ends, which is how the sweep tells a finished run.
        flow_run_id: the flow run the owner record names.
    """
    settings = get_settings()
    run_id = run_id or uuid.uuid4().hex
    run = RunResources(run_id=run_id, task_id=task_id, workdir=(settings.runs_dir / run_id).resolve(),
                       teardown=TeardownRegistry(per_entry_timeout=settings.step_teardown_timeout_seconds),
                       keep=keep, overrides=overrides or RunOverrides())
    return RunScope(run, owner=owner, flow_run_id=flow_run_id)


def open_scoring_run(parent: RunResources, attempt: int) -> RunScope:
    """A run of its own for one isolated-scoring attempt, inside the run it scores.

    It has its own teardown and folder (``<parent folder>/scoring-<attempt>``), the parent's
    options, and the parent's redaction set (what scoring resolves stays out of the report).
    Shared with the parent: the mock model and the ``deploy_sandbox`` sandboxes and their env
    vars (scored in place); the clients it makes and tears down itself.
    """
    settings = get_settings()
    run = RunResources(run_id=f"{parent.run_id}-scoring-{attempt}", task_id=parent.task_id,
                       workdir=parent.workdir / f"scoring-{attempt}", keep=parent.keep,
                       overrides=parent.overrides, redact=parent.redact,
                       teardown=TeardownRegistry(per_entry_timeout=settings.step_teardown_timeout_seconds))
    run.services.mock_model_url = parent.services.mock_model_url
    run.services.gateway = parent.services.gateway  # its model calls are the task run's
    run.services.gateway_pooled = parent.services.gateway_pooled
    run.services.usage_run_id = parent.services.usage_run_id or parent.run_id
    run.services.calls_kept_in = parent.services
    run.services.sandbox_env = parent.services.sandbox_env
    run.services.sandboxes = dict(parent.services.sandboxes)
    return RunScope(run, parent=parent)
