"""One task document as a Prefect *task run* of a benchmark's flow run, instead of a subflow.

A subflow costs Prefect a flow run of its own: seven requests made one after another before its
first step (its parent task run, the flow, a lookup for a run to resume, the flow run, its name,
Running, a read back), and the server records all of it. A task run is created and moved through
its states by events the client sends without waiting. With ``task_runs_as: tasks`` a benchmark
runs each task run this way: the UI still shows each one, named, with its state, its logs and its
artifacts, on the benchmark's flow run page. The steps run inside it without task runs of their own.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.context import TaskRunContext
from prefect.states import Completed, Failed, State

from prefect_agentenv.documents.models import TaskDocument
from prefect_agentenv.flows.adapters.step_log import send_package_logs_to_prefect
from prefect_agentenv.flows.task_runner import run_task_document
from prefect_agentenv.results.task_report import TaskReport


@dataclass
class Handoff:
    """What the benchmark and its task run pass each other in this process: the task run's name
    going in, its report coming out. The report does not travel as the state's data: Prefect logs
    a failed task run's state with its data, which would put the whole report in an error line."""

    name: str
    report: TaskReport | None = None


handoff: ContextVar[Handoff | None] = ContextVar("agent_task_run_handoff", default=None)
"""Set by the benchmark around each call of :func:`agent_task_run`."""


def _task_run_name() -> str:
    given = handoff.get()
    return given.name if given else "agent-task"


@task(name="agent-task", task_run_name=_task_run_name, cache_policy=NO_CACHE, persist_result=False,
      log_prints=True)
async def agent_task_run(document: TaskDocument, overrides: dict[str, str]) -> State:
    """Run ``document`` inside this task run and hand its report back; the state is Failed when
    the report says failed, as the subflow's would be.

    The run's id (its folder, its report in the artifact store) is the task run's id, so task runs
    of one benchmark flow run never share one.
    """
    send_package_logs_to_prefect()
    ctx = TaskRunContext.get()
    run_id = str(ctx.task_run.id) if ctx is not None else None
    report = await run_task_document(document, overrides=overrides, run_id=run_id, execute_in_prefect=False)
    receiver = handoff.get()
    if receiver is not None:
        receiver.report = report
    get_run_logger().info("task %s: %s (score %s)", report.task_id, report.outcome.value, report.score)
    if report.status == "failed":
        return Failed(message=report.error or "the task failed")
    return Completed(message=f"{report.outcome.value} score={report.score}")
