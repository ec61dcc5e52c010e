"""How a benchmark's task run is started: as a subflow or a task run here, or as a flow run of the
agent-task deployment on a work pool (a fleet), with its cell's overrides; and where it ran."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Literal

from prefect import tags
from prefect.context import FlowRunContext
from prefect.deployments import arun_deployment

from prefect_agentenv.artifacts import ArtifactBackend
from prefect_agentenv.documents.compile import ExpandedTask
from prefect_agentenv.documents.published.snapshot import task_ref
from prefect_agentenv.engine.benchmark_source import BenchmarkSource
from prefect_agentenv.exceptions import ArtifactError
from prefect_agentenv.flows.adapters.fleet import cancel_flow_run, create_flow_run, wait_for_flow_run
from prefect_agentenv.flows.adapters.subflow_start import SubflowStarter
from prefect_agentenv.flows.adapters.task_tags import benchmark_task_run_tags, only_tags
from prefect_agentenv.flows.control.follow import run_tag
from prefect_agentenv.flows.fleet.shard_items import ShardItem
from prefect_agentenv.flows.fleet.shards import Shards
from prefect_agentenv.flows.fleet.task_runs import Handoff, agent_task_run, handoff
from prefect_agentenv.flows.task_runner import report_key
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.results import RunKey
from prefect_agentenv.results.task_report import TaskReport

logger = logging.getLogger("prefect_agentenv.benchmark")

SHARD_DEPLOYMENT = "agent-task-shard/agent-task-shard"
"""The deployment that runs a fleet's task runs several at a time (``tasks_per_flow_run`` above 1)."""


def current_flow_run_id() -> str | None:
    ctx = FlowRunContext.get()
    return str(ctx.flow_run.id) if ctx and ctx.flow_run else None


@dataclass(frozen=True)
class Ran:
    """Where a task run ran in Prefect: its own flow run, or a task run of the benchmark's."""

    kind: Literal["flow run", "task run"]
    flow_run_id: str | None
    task_run_id: str | None = None


class Dispatcher:
    """Starts a benchmark's task runs the way its run dispatches them."""

    def __init__(self, source: BenchmarkSource, *, dispatch: str, deployment: str, store: ArtifactBackend,
                 tasks_per_flow_run: int = 1, shard_deployment: str = SHARD_DEPLOYMENT, run_id: str | None = None
                 ) -> None:
        self.source, self.dispatch, self.deployment, self.store = source, dispatch, deployment, store
        self.run_tags = [run_tag(run_id)] if run_id else []
        """A fleet's flow runs name their benchmark run: they follow its hold of model calls (flows/control/follow)."""
        self.starter: SubflowStarter | None = None
        """Starts this process's subflows while they run (set by the benchmark for the run's length)."""
        self.shards = Shards(store, deployment=shard_deployment, size=tasks_per_flow_run,
                             step_task_runs=source.header.step_task_runs,
                             tags=[f"benchmark:{source.header.slug}", *self.run_tags]) if tasks_per_flow_run > 1 else None
        """Gathers a fleet's task runs into flow runs of several (``tasks_per_flow_run`` above 1)."""

    def expect(self, count: int) -> None:
        """``count`` more task runs are coming: a shard not yet full waits for them rather than going at once."""
        if self.shards is not None:
            self.shards.expect(count)

    async def aclose(self) -> None:
        """Wait for the shards still running (a fleet's task runs sent several at a time)."""
        if self.shards is not None:
            await self.shards.aclose()

    async def run(self, task: ExpandedTask, key: RunKey, overrides: dict[str, str]) -> tuple[TaskReport | None, Ran]:
        """One attempt of a run key with its cell's overrides: its report (``None``: none) and where it ran.

        In a sweep the run's name ends with its cell and a ``cell:<label>`` tag marks it, so the
        UI tells the cells' task runs apart; otherwise the name ends with the agent, if one is set.
        """
        agent = overrides.get("a2a_agent_id") or self.source.header.defaults.a2a_agent_id
        suffix = key.cell or agent
        name = f"{task.task_id} · epoch {key.epoch}" + (f" · {suffix}" if suffix else "")
        run_tags = [f"benchmark:{self.source.header.slug}", *task.tags, f"epoch:{key.epoch}", f"seed:{key.seed_index}",
                    *([f"cell:{key.cell}"] if key.cell else [])]
        with tags(*run_tags):
            if self.dispatch == "deployment":
                return await self._dispatch_to_deployment(task, name, [*run_tags, *self.run_tags], overrides)
            if self.source.header.task_runs_as == "tasks":
                return await self._run_as_task(task, name, overrides)
            # Imported here: task runs recorded as tasks (and fleets) never need the flow.
            from prefect_agentenv.flows.agent_task import start_agent_task

            state = await start_agent_task(name, self.starter, task=task.document, overrides=overrides,
                                           step_task_runs=self.source.header.step_task_runs)
            data = await state.aresult(raise_on_failure=False)
        report = TaskReport.model_validate(data) if isinstance(data, dict) else None
        return report, Ran("flow run", str(state.state_details.flow_run_id) if state.state_details else None)

    async def _run_as_task(self, task: ExpandedTask, name: str,
                           overrides: dict[str, str]) -> tuple[TaskReport | None, Ran]:
        """The task run as a Prefect task run of this flow run (``task_runs_as: tasks``)."""
        given = Handoff(name)
        token = handoff.set(given)
        try:
            with only_tags(await benchmark_task_run_tags()):
                # Prefect's overloads type return_state=True as returning the State even for an
                # async task; at run time it is a coroutine of it.
                state = await agent_task_run(task.document, overrides, return_state=True)  # type: ignore[misc]
        finally:
            handoff.reset(token)
        details = state.state_details
        return given.report, Ran("task run", current_flow_run_id(),
                                 str(details.task_run_id) if details and details.task_run_id else None)

    async def _dispatch_to_deployment(self, task: ExpandedTask, name: str, run_tags: list[str],
                                      overrides: dict[str, str]) -> tuple[TaskReport | None, Ran]:
        """Start the task as a flow run of the agent-task deployment and wait for it; when this wait is
        cut short (the task's timeout, a cancelled benchmark) the flow run is cancelled too, so its worker
        tears its envs and agents down instead of running on unobserved."""
        # A published task goes by its name: the worker reads the frozen copy from the shared store.
        given = task_ref(self.source.ref, task.task_id) if self.source.ref else self.source.document_json(task)
        if self.shards is not None:
            return await self._run_in_shard(given, name, run_tags, overrides)
        flow_run = await create_flow_run(arun_deployment(
            self.deployment, parameters={"task": given, "overrides": overrides,
                                         "step_task_runs": self.source.header.step_task_runs},
            flow_run_name=name, tags=run_tags, timeout=0, as_subflow=True,
            client=self.starter.client if self.starter else None))
        try:
            await wait_for_flow_run(flow_run.id)
        except (TimeoutError, asyncio.CancelledError):
            await asyncio.shield(cancel_flow_run(flow_run.id))
            raise
        return await asyncio.to_thread(self._read_report, str(flow_run.id)), Ran("flow run", str(flow_run.id))

    async def _run_in_shard(self, given: str | JsonObject, name: str, run_tags: list[str],
                            overrides: dict[str, str]) -> tuple[TaskReport | None, Ran]:
        """The task run as one of a shard's (flows/fleet/shards); with no flow run of its own, its shard's."""
        assert self.shards is not None
        self.shards.client = self.starter.client if self.starter else None
        # Constructed, not validated: the document is checked where it runs, as the worker checks `task`.
        item = ShardItem.model_construct(task=given, overrides=overrides, name=name, tags=run_tags)
        flow_run_id, shard_id = await self.shards.run(item)
        if flow_run_id is None:
            return None, Ran("flow run", shard_id)
        return await asyncio.to_thread(self._read_report, flow_run_id), Ran("flow run", flow_run_id)

    def _read_report(self, flow_run_id: str) -> TaskReport | None:
        try:
            return TaskReport.model_validate_json(self.store.get_object(report_key(flow_run_id)))
        except ArtifactError:
            return None
        except ValueError as exc:  # not a report this version can read: the run counts as crashed
            logger.warning("the report of flow run %s is unreadable: %s", flow_run_id, exc)
            return None
