"""The one-off requests of a run's control Variable: requeue finished task runs, cancel one task run.

A requeued task run goes back in the live queue; the results it had stay in ``results.jsonl``
and its new result lists them under ``requeued``. A task run already queued or running is not
requeued again. A cancelled task run stops (or, still queued, never starts) and is recorded as
cancelled; the rest go on.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from prefect_agentenv.flows.control.inflight import key_name, select
from prefect_agentenv.flows.control.state import ControlRequest
from prefect_agentenv.results import RunKey, TaskResult, latest_per_run_key
from prefect_agentenv.results.control_log import ControlChange

if TYPE_CHECKING:
    from prefect_agentenv.flows.control.steering import Steering


async def apply_request(steering: Steering, request: ControlRequest) -> tuple[str, list[ControlChange]]:
    """Apply ``request`` once: what came of it (for ``control``'s answer), and its change to record."""
    if request.action == "cancel":
        outcome, what, ok = _cancel(steering, request)
    else:
        outcome, what, ok = await _requeue(steering, request)
    from prefect_agentenv.flows.control.steering import now_iso

    change = ControlChange(at=now_iso(), by=request.by, kind=request.action if ok else "refused", what=what,
                           reason=request.reason, detail=outcome if not ok or request.action == "requeue" else outcome)
    return (outcome if ok else f"refused: {outcome}"), [change]


def _cancel(steering: Steering, request: ControlRequest) -> tuple[str, str, bool]:
    query = request.tasks[0] if request.tasks else ""
    live = list(steering.tasks)
    found = select(query, live)
    if len(found) != 1:
        running = ", ".join(key_name(k) for k in live) or "none"
        why = "names several" if found else "names none"
        return f"{query!r} {why} of the task runs queued or running ({running})", f"cancel {query}", False
    key = found[0]
    stopped = steering.flight.cancel(key, request.by, request.reason)
    return ("stopped and torn down" if stopped else "taken out of the queue before it started"), key_name(key), True


async def _requeue(steering: Steering, request: ControlRequest) -> tuple[str, str, bool]:
    latest = {r.run_key: r for r in latest_per_run_key(await asyncio.to_thread(steering.latest))}
    chosen = [key for key, result in latest.items() if key not in steering.tasks and _wanted(request, key, result)]
    what = _selection(request)
    if not chosen:
        return f"no finished task run matches {what}", f"requeue {what}", False
    for key in chosen:
        steering.requeued.setdefault(key, []).append(latest[key])
        steering.spawn(key)
    steering.grown(len(chosen))
    names = ", ".join(key_name(k) for k in chosen[:10]) + (f" and {len(chosen) - 10} more" if len(chosen) > 10 else "")
    return f"{len(chosen)} task run(s) back in the queue: {names}", f"requeue {what}", True


def _wanted(request: ControlRequest, key: RunKey, result: TaskResult) -> bool:
    if request.errored and (result.errored or result.status == "cancelled"):
        return True
    if request.infrastructure and result.infrastructure_failed:
        return True
    return any(select(query, [key]) for query in request.tasks)


def _selection(request: ControlRequest) -> str:
    parts = (["errored"] if request.errored else []) + (["infrastructure"] if request.infrastructure else [])
    return " + ".join(parts + request.tasks) or "nothing"
