"""The ``agent_task`` flow: one task document, each step a Prefect task, teardown guaranteed."""

from __future__ import annotations

from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefect import get_run_logger
from prefect.context import FlowRunContext
from prefect.states import Cancelled, Completed, Failed, State

from prefect_agentenv.documents.models import TaskDocument
from prefect_agentenv.exceptions import TaskDocumentError
from prefect_agentenv.flows.adapters.cancellation import watch_cancellation
from prefect_agentenv.flows.adapters.json_flow import json_parameter_flow
from prefect_agentenv.flows.adapters.run_tags import add_flow_run_tags
from prefect_agentenv.flows.adapters.step_log import send_package_logs_to_prefect
from prefect_agentenv.flows.adapters.task_parameter import TaskParameter, resolve_task_parameter
from prefect_agentenv.flows.control.follow import following, run_of
from prefect_agentenv.flows.task_runner import current_flow_run_id, is_top_level_run, report_key, run_task_document
from prefect_agentenv.runtime.resources.stop import StopRequest

if TYPE_CHECKING:
    from prefect_agentenv.flows.adapters.subflow_start import SubflowStarter

__all__ = ["agent_task", "report_key", "run_task_document", "start_agent_task", "subflow_run_name"]
"""``run_task_document`` and ``report_key`` are defined in ``flows/task_runner`` and named here too."""


subflow_run_name: ContextVar[str | None] = ContextVar("agent_task_run_name", default=None)
"""The name of the next ``agent_task`` flow run started in this context (a benchmark names each of
its task runs). Set instead of ``agent_task.with_options(flow_run_name=...)``: every ``with_options``
builds a new flow, and a flow builds the JSON schema of its parameters (the task document: a union
of every step type), which cost ~0.2 s of CPU per task run."""


def _agent_task_run_name() -> str:
    """``<task id>`` plus the agents under test (after overrides), so runs read well in the UI."""
    given = subflow_run_name.get()
    if given:
        return given
    ctx = FlowRunContext.get()
    params = ctx.flow_run.parameters if ctx and ctx.flow_run else {}
    task = params.get("task")
    if isinstance(task, str):  # a path or an artifact id: its name is the best we have before loading it
        return Path(task).stem or task
    if isinstance(task, list):
        task = {"steps": task}
    data = task.model_dump() if isinstance(task, TaskDocument) else task if isinstance(task, dict) else {}
    steps = data.get("steps", data) if isinstance(data, dict) else data
    overrides = params.get("overrides") or {}
    found = (overrides.get(f"{s.get('agent_name')}.a2a_agent_id") or overrides.get("a2a_agent_id")
             or s.get("a2a_agent_id") for s in steps or [] if isinstance(s, dict) and s.get("type") == "deploy_agent")
    agents = sorted({str(agent) for agent in found if agent is not None})
    task_id = data.get("id", "task") if isinstance(data, dict) else "task"
    return f"{task_id} · {', '.join(agents)}" if agents else str(task_id)


@json_parameter_flow(name="agent-task", flow_run_name=_agent_task_run_name, persist_result=False, log_prints=True,
      validate_parameters=True)
async def agent_task(
    task: TaskParameter,
    seeds: dict[str, str] | None = None,
    overrides: dict[str, str] | None = None,
    keep: bool = False,
    report_path: str | None = None,
    step_task_runs: bool = True,
) -> State:
    """Run one agent-evaluation task: deploy, prompt, grade, collect, tear down, report.

    Args:
        task: The task document: `{"id": ..., "tags": [...], "steps": [...]}`, a bare list of steps, the path
            of a document on the worker, or the id (`ID` or `ID@VERSION`) of a file artifact holding one.
        seeds: Values for `<name>` placeholders in the document, e.g. `{"customer": "Dana"}`.
        overrides: Per-run overrides, e.g. `{"a2a_agent_id": "scripted"}`, `{"judge_model": "gpt-4.1-mini"}`
            or `{"assistant.agent_config": "{...}"}`.
        keep: Keep the agents' sandboxes after the run (to inspect the files they wrote).
        report_path: Also write the JSON report to this path on the worker.
        step_task_runs: Record each step as a Prefect task run (off: the steps are in the report and
            the summary artifact's steps table only, and Prefect records about half as much per run).
    """
    try:
        document = resolve_task_parameter(task)
    except TaskDocumentError as exc:  # a user mistake: every problem listed, no traceback
        get_run_logger().error("%s", exc)
        return Failed(message=str(exc))
    send_package_logs_to_prefect()
    await add_flow_run_tags(document.tags)
    stop = StopRequest()
    top_level = is_top_level_run()
    ctx = FlowRunContext.get()
    # Only a process's own run watches for cancellation: subflows of a benchmark stop with it. A
    # fleet's task run follows its benchmark's hold of the agents' model calls (flows/control/follow).
    async with watch_cancellation(stop, current_flow_run_id() if top_level else None), following(
            run_of(ctx.flow_run.tags) if ctx and ctx.flow_run else None):
        report = await run_task_document(document, seeds=seeds, overrides=overrides, keep=keep, stop=stop,
                                         report_path=Path(report_path) if report_path else None,
                                         handle_signals=top_level, execute_in_prefect=step_task_runs)
    get_run_logger().info("task %s: %s (score %s)", report.task_id, report.outcome.value, report.score)
    data = report.model_dump(mode="json")
    if report.stop_reason:
        # Returned, not raised: the engine moves the run to Cancelled, with no Crashed detour.
        return Cancelled(message=report.error or "the run was stopped", data=data)
    if report.status == "failed":
        return Failed(message=report.error or "the task failed", data=data)
    return Completed(message=f"{report.outcome.value} score={report.score}", data=data)


async def start_agent_task(name: str, starter: SubflowStarter | None, **parameters: Any) -> State:
    """Run ``agent_task`` as a subflow named ``name``, through ``starter`` when there is one; its final state.

    The one way a benchmark (in process) and a shard (on a worker) start a task run's subflow, so the
    two name, tag and record it alike.
    """
    named = subflow_run_name.set(name)  # not with_options: that rebuilds the flow's parameter schema
    try:
        if starter is not None:
            return await starter.run(agent_task, name, **parameters)
        return await agent_task(**parameters, return_state=True)
    finally:
        subflow_run_name.reset(named)
