"""Steering a running benchmark: its live queue, read from its control Variable about once a second.

The benchmark's dispatcher runs every task run through a :class:`Steering`: each run key waits
at the :class:`~.gate.LiveGate` for a slot, its attempt runs in the :class:`~.inflight.InFlight`
registry, and a task running beside them polls the control Variable and applies what changed:

* ``paused`` and ``concurrency`` move the gate (no task run starts while paused; the running ones
  finish); ``hold_model_calls`` holds agents at their next model call in the gateway;
* ``timeout_seconds`` moves every running attempt's deadline, and the next ones';
* ``budget_usd`` / ``budget_tokens`` change what the run may still spend; ``limit_*`` the model-call
  limits of task runs started from then on;
* requests put finished task runs back in the queue (their earlier results stay on record) or
  cancel one task run.

Every change is recorded once (:mod:`prefect_agentenv.results.control_log`): in the control log
beside the results, on the live board, in the flow run's control artifact and in its logs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar

from prefect.client.orchestration import get_client
from pydantic import JsonValue

from prefect_agentenv.artifacts import ArtifactBackend
from prefect_agentenv.documents.benchmarks.document import RunBudget
from prefect_agentenv.flows.control.channel import ControlChannel, operator
from prefect_agentenv.flows.control.gate import LiveGate
from prefect_agentenv.flows.control.inflight import InFlight, cancelled_result, key_name
from prefect_agentenv.flows.control.requests import apply_request
from prefect_agentenv.flows.control.state import (
    LIMIT_KEYS,
    RESULTS_LABEL,
    SETTINGS,
    STORE_LABEL,
    UI,
    ControlState,
    RunStatus,
)
from prefect_agentenv.flows.fleet.budget import RunSpend
from prefect_agentenv.gateway.hold import ModelHold
from prefect_agentenv.gateway.limits import Budget
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.results import RetriedAttempt, RunKey, TaskResult
from prefect_agentenv.results.control_log import (
    ChangeKind,
    ControlChange,
    append_changes,
    changes_markdown,
    read_changes,
)
from prefect_agentenv.results.rows import FailureCause

if TYPE_CHECKING:
    from prefect.client.orchestration import PrefectClient

    from prefect_agentenv.flows.benchmark import _Runner
    from prefect_agentenv.run_services.model_door import ModelTraffic

logger = logging.getLogger("prefect_agentenv.benchmark")
R = TypeVar("R")

POLL_SECONDS = 1.0
"""How often the control Variable is read: a change applies within about this long."""
COUNTS_SECONDS = 5.0
"""How often at most the status Variable is written when only the counts moved (a change an
operator made is written back at once: ``control`` waits for it)."""
FINISH_SECONDS = 10.0
"""How long the run's end waits for the tick under way and the last status write."""
FINISH_APART_SECONDS = 60.0
"""How long the run's end then waits to mark the run finished on its own (``control status`` shows it)."""


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Steering:
    """A benchmark run's live queue and the operator's controls over it."""

    def __init__(self, *, run_id: str, slug: str, flow_run_id: str | None, store: ArtifactBackend, folder: str,
                 concurrency: int, spend: RunSpend | None, total: int, done: int,
                 emit: Callable[[str, JsonObject], None], latest: Callable[[], list[TaskResult]],
                 task_seconds: Callable[[RunKey], float | None], results_url: str | None = None,
                 store_name: str | None = None, grown: Callable[[int], None] | None = None) -> None:
        self.store, self.folder, self.emit, self.latest, self.task_seconds = store, folder, emit, latest, task_seconds
        self.gate, self.hold, self.flight, self.spend = LiveGate(concurrency), ModelHold(), InFlight(), spend
        self.counter: Budget = spend.gateway if spend is not None else Budget.counting()
        """What the gateways of the task runs in this process count their calls against (bound by the
        benchmark), with or without a bound: a budget set while the run runs counts the calls before."""
        self.applied = ControlState(run_id=run_id, slug=slug, flow_run_id=flow_run_id, concurrency=concurrency,
                                    budget_usd=spend.budget.usd if spend else None,
                                    budget_tokens=spend.budget.tokens if spend else None)
        self.status = RunStatus(run_id=run_id, slug=slug, flow_run_id=flow_run_id, results_url=results_url,
                                store=store_name)
        self.total, self.done, self.errored = total, done, 0
        self.changes: list[ControlChange] = []
        """This run's log: the changes of earlier attempts of the run (a resume), then this one's."""
        self.requeued: dict[RunKey, list[TaskResult]] = {}
        self.tasks: dict[RunKey, asyncio.Task[None]] = {}
        self.run_key: Callable[[RunKey], Awaitable[None]] | None = None
        self.grown: Callable[[int], None] = grown or (lambda n: None)
        """Told how many task runs a requeue added (the progress bar's total grows)."""
        self.channel: ControlChannel | None = None
        self._poller: asyncio.Task[None] | None = None
        self._problem: str | None = None
        self._stop = asyncio.Event()
        self._written: tuple[str, str] | None = None
        """The status last written: what the operator waits for (settings, requests, state), and the counts."""
        self._written_at = 0.0
        self._opened = self._finished = False
        """The Variables were made; the status was marked finished (by the poller, at the run's end)."""

    @classmethod
    def of(cls, runner: _Runner, *, total: int, done: int, emit: Callable[[str, JsonObject], None]) -> Steering:
        """The steering of a benchmark run about to start its task runs."""
        from prefect_agentenv.flows.fleet.dispatch import current_flow_run_id
        from prefect_agentenv.settings import get_settings

        settings = get_settings()
        store = f"block:{settings.artifact_store_block}" if settings.artifact_store_block else (
            f"local:{settings.artifacts_dir}")
        return cls(run_id=runner.run_id, slug=runner.bench.slug, flow_run_id=current_flow_run_id(),
                   store=runner.store, folder=runner.results.folder, concurrency=runner.concurrency,
                   spend=runner.budget, total=total, done=done, emit=emit, latest=runner.results.read_results,
                   task_seconds=lambda key: runner.tasks[key.task_id].timeout_seconds,
                   results_url=runner.results.results_url, store_name=store, grown=runner.progress.grow)

    def traffic(self, traffic: ModelTraffic | None) -> ModelTraffic:
        """The run's model traffic with this run's hold of the agents' calls."""
        import dataclasses

        from prefect_agentenv.run_services.model_door import ModelTraffic

        return dataclasses.replace(traffic or ModelTraffic(), hold=self.hold)

    async def run_all(self, keys: list[RunKey], run_key: Callable[[RunKey], Awaitable[None]]) -> None:
        """Queue ``keys`` (in order) and wait until the queue is empty, requeued task runs included."""
        self.run_key = run_key
        for key in keys:
            self.spawn(key)
        await self.drain()

    # -- the run's life ------------------------------------------------------------------------

    async def __aenter__(self) -> Steering:
        self.changes = await asyncio.to_thread(read_changes, self.store, self.folder)
        start = ControlChange(at=now_iso(), by=operator(), kind="start", what="settings",
                              new={k: v for k, v in self.applied.settings().items() if v not in (None, False)},
                              detail="resumed" if self.changes else None)
        await self._record([start])
        # The Variables are made beside the first task runs, not before them: on a busy SQLite
        # server those writes cost the run's start seconds (the benchmarks README's section on control_overhead.py).
        self._poller = asyncio.create_task(self._poll(), name="benchmark control")
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        self._stop.set()
        if self._poller is not None:  # a tick under way ends first (its change's answer is written), then the end
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._poller), FINISH_SECONDS)
            self._poller.cancel()
            await asyncio.gather(self._poller, return_exceptions=True)
            if self._opened and not self._finished:  # its request stuck on a busy server: the end is still written
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(asyncio.shield(self._finish_apart()), FINISH_APART_SECONDS)
        self.hold.release()

    async def _poll(self) -> None:
        """The channel's life: open it, read the control Variable every ``POLL_SECONDS`` until the
        run ends, then mark the run finished. The client is this task's alone."""
        try:
            async with get_client() as client:
                await self._open(client)
                await self._serve()
        except Exception as exc:  # steering is an addition: the benchmark runs without it
            logger.warning("the run cannot be controlled while it runs (its control Variable: %s)", exc)
        finally:
            self.channel = None

    async def _open(self, client: PrefectClient) -> None:
        self.channel = ControlChannel(client)
        await self.channel.forget_finished(self.applied.slug)
        await self.channel.write_control(self.applied)
        await self._write_status(force=True)
        self._opened = True
        await self._label_flow_run(client)

    async def _serve(self) -> None:
        """Apply the operator's changes until the run ends, then mark it finished."""
        assert self.channel is not None
        while not await self._stopped_within(POLL_SECONDS):
            try:
                await self.tick()
            except Exception as exc:  # the API away for a moment: the next tick tries again
                logger.debug("reading the run's control Variable failed: %s", exc)
        with contextlib.suppress(Exception):
            await self._finish_variables(self.channel)

    async def _stopped_within(self, seconds: float) -> bool:
        """Wait ``seconds``, or less when the run ends meanwhile; whether it ended."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), seconds)
        return self._stop.is_set()

    async def _finish_variables(self, channel: ControlChannel) -> None:
        """The control Variable goes; the status Variable stays, marked finished (``control status``
        shows the end, and a change still being waited for gets its answer) until the next run of
        the benchmark starts."""
        self.status.state = "finished"
        await self._write_status(force=True)
        await channel.delete_control(self.applied.run_id)
        self._finished = True

    async def _finish_apart(self) -> None:
        """Mark the run finished with a client of its own: the poller's was stopped in a request that
        did not end in time (a server busy with the run's task runs can hold a write that long)."""
        async with get_client() as client:
            self.channel = ControlChannel(client)
            try:
                await self._finish_variables(self.channel)
            finally:
                self.channel = None

    async def _label_flow_run(self, client: PrefectClient) -> None:
        """Say on the benchmark's flow run where its results are: ``view`` and ``compare`` on another
        machine or home find the run through it (commands/_run_home)."""
        if self.status.flow_run_id and self.status.store:
            labels: dict[str, str | int | float | bool] = {STORE_LABEL: self.status.store,
                                                          RESULTS_LABEL: self.status.results_url or ""}
            await client.update_flow_run_labels(uuid.UUID(self.status.flow_run_id), labels)

    def spawn(self, key: RunKey) -> None:
        """Put ``key`` in the queue (it waits at the gate in the order it came)."""
        assert self.run_key is not None
        self.tasks[key] = asyncio.create_task(self._run(key, self.run_key), name=f"task run {key_name(key)}")

    async def _run(self, key: RunKey, run_key: Callable[[RunKey], Awaitable[None]]) -> None:
        try:
            await run_key(key)
        finally:
            self.tasks.pop(key, None)

    async def drain(self) -> None:
        """Wait until the queue is empty (requeued task runs included); the first error is raised."""
        while self.tasks:
            done, _ = await asyncio.wait(list(self.tasks.values()), return_when=asyncio.FIRST_EXCEPTION)
            failed = next((t for t in done if not t.cancelled() and t.exception() is not None), None)
            if failed is not None:
                for t in self.tasks.values():
                    t.cancel()
                await asyncio.gather(*self.tasks.values(), return_exceptions=True)
                raise failed.exception()  # type: ignore[misc]

    # -- what the runner asks ------------------------------------------------------------------

    def overrides(self, base: dict[str, str]) -> dict[str, str]:
        """A task run's overrides with the operator's live model-call limits over them."""
        live = {k: str(getattr(self.applied, k)) for k in LIMIT_KEYS if getattr(self.applied, k) is not None}
        return {**base, **live} if live else base

    async def attempt(self, key: RunKey, run: Callable[[], Awaitable[tuple[TaskResult, R | None]]]
                      ) -> tuple[TaskResult, R | None]:
        """One attempt of ``key``, or its cancelled result when an operator cancels it."""
        started = now_iso()
        return await self.flight.attempt(key, run, lambda c, s: (cancelled_result(key, c.by, c.reason, started, s),
                                                                  None))

    def noted(self, result: TaskResult) -> TaskResult:
        """A result about to be recorded: counted, with the earlier results an operator requeued."""
        self.done += 1
        self.errored += result.errored or result.status == "cancelled"
        earlier = self.requeued.pop(result.run_key, [])
        if not earlier:
            return result
        attempts = [RetriedAttempt(failure=r.failure or FailureCause(kind="agent", reason=r.outcome.value.lower()),
                                   flow_run_id=r.flow_run_id, task_run_id=r.task_run_id, report_url=r.report_url,
                                   started_at=r.started_at, duration_s=r.duration_s) for r in earlier]
        return result.model_copy(update={"requeued": [*result.requeued, *attempts]})

    def summary_section(self) -> str:
        """The summary's section on the changes made while the run ran (empty when none was)."""
        section = changes_markdown(self.changes)
        return "\n\n" + section if section else ""

    # -- polling the control Variable ----------------------------------------------------------

    async def tick(self) -> None:
        """Read the control Variable once and apply what changed."""
        assert self.channel is not None
        state, problem = await self.channel.read_control(self.applied.run_id)
        if state is None:
            if problem != self._problem:
                self._problem = problem
                await self._record([ControlChange(at=now_iso(), by=UI, kind="refused", what="control Variable",
                                                  detail=f"{problem}; the settings in effect stay")])
            if problem and "does not exist" in problem:
                await self.channel.write_control(self.applied)
        else:
            self._problem = None
            await self._apply(state)
        await self._write_status()

    async def _apply(self, state: ControlState) -> None:
        fresh = state.stamp != self.applied.stamp
        by = (state.changed_by or UI) if fresh and state.stamp else UI
        reason = state.reason if fresh or state.reason != self.applied.reason else None
        changes = [self._apply_setting(name, getattr(self.applied, name), getattr(state, name), by, reason)
                   for name in SETTINGS if getattr(self.applied, name) != getattr(state, name)]
        budget = [c for c in changes if c.what in ("budget_usd", "budget_tokens")]
        if budget:
            budget[-1].detail = await self._set_budget(state.budget_usd, state.budget_tokens)
        self.applied = state.model_copy(update={"requests": [], "run_id": self.applied.run_id,
                                                "slug": self.applied.slug, "flow_run_id": self.applied.flow_run_id})
        for request in state.requests:
            if request.id not in self.status.applied_requests:
                outcome, made = await apply_request(self, request)
                self.status.applied_requests[request.id] = outcome
                changes += made
        if changes:
            await self._record(changes)

    def _apply_setting(self, name: str, old: object, new: object, by: str, reason: str | None) -> ControlChange:
        kind: ChangeKind = "set"
        if name == "paused":
            self.gate.set(paused=bool(new))
            kind = "pause" if new else "resume"
        elif name == "hold_model_calls":
            if new:
                self.hold.hold()
            else:
                self.flight.extend(self.hold.release())  # held time does not count against a task run's limit
            kind = "pause" if new else "resume"
        elif name == "concurrency":
            self.gate.set(concurrency=int(str(new)))
        elif name == "timeout_seconds":
            self.flight.set_timeout(float(str(new)) if new is not None else None, self.task_seconds)
        return ControlChange(at=now_iso(), by=by, kind=kind, what=name, old=_json(old), new=_json(new), reason=reason)

    async def _set_budget(self, usd: float | None, tokens: int | None) -> str | None:
        """The run's budget now (``None`` and ``None``: none). A run that had none counts what it has
        spent so far too: the calls its gateways here counted since it started, and the usage its
        recorded results carry (a fleet's task runs, a resumed run's earlier attempts). Says so."""
        budget = RunBudget.model_validate({"usd": usd, "tokens": tokens})
        if self.spend is not None:
            self.spend.budget = budget
            self.counter.usd, self.counter.tokens = usd, tokens
            return None
        if usd is None and tokens is None:
            return None
        results = await asyncio.to_thread(self.latest)
        self.spend = RunSpend(budget, gateway=self.counter)
        for result in results:
            self.spend.add(result.usage)
        here, recorded = self.counter.spent(), self.spend.reported
        return (f"the run had no budget: spent so far {here.tokens:,} tokens (${here.cost_usd:.4f}) in this "
                f"process's gateways, {(recorded.input_tokens or 0) + (recorded.output_tokens or 0):,} tokens "
                f"(${recorded.cost_usd or 0:.4f}) in its {len(results)} recorded results")

    # -- recording -----------------------------------------------------------------------------

    async def _record(self, changes: list[ControlChange]) -> None:
        self.changes += changes
        for change in changes:
            if change.kind != "start":
                logger.info("control: %s", change.line())
        try:
            await asyncio.to_thread(append_changes, self.store, self.folder, changes)
        except Exception as exc:  # the store away for a moment: the summary still lists the change
            logger.warning("could not add to the run's control log: %s", exc)
        self.emit("control", self.board())
        await self._publish()

    def board(self) -> JsonObject:
        """What the live board shows of the controls."""
        return {"paused": self.gate.paused, "held": self.hold.held, "concurrency": self.gate.concurrency,
                "running": len(self.flight.attempts), "total": self.total + sum(map(len, self.requeued.values())),
                "changes": list[JsonValue]([c.line() for c in self.changes if c.kind != "start"][-5:])}

    async def _publish(self) -> None:
        """The flow run's control artifact: the run's changes so far (a view; a failure is logged)."""
        markdown = changes_markdown(self.changes)
        if not markdown:
            return
        from prefect.artifacts import acreate_markdown_artifact
        from prefect.context import FlowRunContext

        from prefect_agentenv.flows.ui.task import artifact_key

        if FlowRunContext.get() is None:
            return
        try:
            await acreate_markdown_artifact(markdown, key=artifact_key("bench", self.applied.slug, "control"),
                                            description=f"Changes made to run {self.applied.run_id} while it ran")
        except Exception as exc:
            logger.warning("could not publish the control artifact: %s", exc)

    async def _write_status(self, *, force: bool = False) -> None:
        """Write the status Variable when what the operator waits for changed (at once) or the counts
        moved (at most every ``COUNTS_SECONDS``): one write a tick cost a busy server a write lock a second."""
        if self.channel is None:
            return
        running = self.flight.names()
        self.status.applied = self.applied.settings()
        self.status.running = running
        self.status.counts = {"total": self.total, "running": len(running),
                              "queued": self.gate.waiting, "done": self.done,
                              "errored": self.errored, "held_calls": self.hold.waiting}
        settled = self.status.model_dump_json(include={"state", "applied", "applied_requests"})
        counts = self.status.model_dump_json(include={"counts", "running"})
        last = self._written
        due = force or last is None or last[0] != settled or (
            last[1] != counts and time.monotonic() - self._written_at >= COUNTS_SECONDS)
        if due:
            self.status.updated_at = now_iso()
            await self.channel.write_status(self.status)
            self._written, self._written_at = (settled, counts), time.monotonic()


def _json(value: object) -> str | int | float | bool | None:
    return value if value is None or isinstance(value, (str, int, float, bool)) else str(value)

