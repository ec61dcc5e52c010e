"""``prefect-agentenv control``: steer a benchmark run in progress, from any shell that reaches its Prefect server.

Each change is written to the run's control Variable (``agentenv-control-<run id>``) with who
made it, why and a new stamp; the run's dispatcher applies it within about a second and says
so in its status Variable, which this command waits for (a few seconds) before it answers.
``RUN`` is the run's id, or the slug of the one run of that benchmark in progress.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import TYPE_CHECKING, Annotated

import typer

from prefect_agentenv.commands._registry import fail, reported
from prefect_agentenv.exit_codes import ExitCode

if TYPE_CHECKING:
    from prefect_agentenv.flows.control.channel import ControlChannel
    from prefect_agentenv.flows.control.state import ControlState, RunStatus

control_app = typer.Typer(help="Steer a benchmark run in progress: status, pause, resume, set, requeue, cancel.",
                          no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)

Run = Annotated[str, typer.Argument(metavar="RUN", help="The run's id, or the benchmark's slug (its one run in "
                                                        "progress).")]
Reason = Annotated[str | None, typer.Option(help="Why: kept with the change in the run's control log.")]
Wait = Annotated[float, typer.Option(help="Seconds to wait for the run to apply the change (0: do not wait).",
                                     min=0.0)]
SETTABLE = ("concurrency", "timeout_seconds", "budget_usd", "budget_tokens", "limit_tokens", "limit_output_tokens",
            "limit_cost_usd", "limit_model_calls", "limit_seconds")
"""What ``control set`` takes (``none`` clears all but ``concurrency``)."""


@control_app.command("status")
def status_command(run: Run, as_json: Annotated[bool, typer.Option("--json", help="The status as JSON.")] = False
                   ) -> None:
    """The run's state, concurrency, limits and budget, and its task runs running, queued, done and errored."""
    with reported():
        found = _go(_status(run))
        if as_json:
            typer.echo(found.model_dump_json(indent=2))
            return
        typer.echo(_status_text(found))


@control_app.command("pause")
def pause_command(run: Run, now: Annotated[bool, typer.Option(
        "--now", help="Also hold every agent at its next model call (resume releases them).")] = False,
                  reason: Reason = None, wait: Wait = 10.0) -> None:
    """Start no new task run (the running ones finish); with --now, hold the agents at their next model call."""
    with reported():
        _change(run, {"paused": True, **({"hold_model_calls": True} if now else {})}, reason, wait)


@control_app.command("resume")
def resume_command(run: Run, reason: Reason = None, wait: Wait = 10.0) -> None:
    """Start task runs again, as many as the concurrency allows, and release held model calls."""
    with reported():
        _change(run, {"paused": False, "hold_model_calls": False}, reason, wait)


@control_app.command("set")
def set_command(run: Run, values: Annotated[list[str], typer.Argument(
        metavar="KEY=VALUE...", help=f"Any of: {', '.join(SETTABLE)} (VALUE none clears one, but concurrency).")],
                reason: Reason = None, wait: Wait = 10.0) -> None:
    """Change the concurrency, the time limit, the budget or the model-call limits of a run in progress."""
    with reported():
        _change(run, _settings(values), reason, wait)


@control_app.command("requeue")
def requeue_command(run: Run, tasks: Annotated[list[str] | None, typer.Argument(
        metavar="[TASK_RUN]...", help="Task runs to run again: a task id, TASK/EPOCH or TASK/SEED/EPOCH.")] = None,
                    errored: Annotated[bool, typer.Option(help="Every task run whose last result errored.")] = False,
                    infrastructure: Annotated[bool, typer.Option(
                        help="Every task run whose last result failed for infrastructure.")] = False,
                    reason: Reason = None, wait: Wait = 10.0) -> None:
    """Put finished task runs back in the run's queue; their earlier results stay on record."""
    with reported():
        if not (tasks or errored or infrastructure):
            fail("control requeue: name task runs, or give --errored or --infrastructure", ExitCode.INVALID)
        _request(run, {"action": "requeue", "errored": errored, "infrastructure": infrastructure,
                       "tasks": tasks or []}, reason, wait)


@control_app.command("cancel")
def cancel_command(run: Run, task_run: Annotated[str, typer.Argument(
        metavar="TASK_RUN", help="The task run: its task id, TASK/EPOCH or TASK/SEED/EPOCH (control status lists "
                                 "the running ones).")],
                   reason: Reason = None, wait: Wait = 10.0) -> None:
    """Stop one task run and tear it down (recorded as cancelled); the rest go on."""
    with reported():
        _request(run, {"action": "cancel", "tasks": [task_run]}, reason, wait)


def _settings(values: list[str]) -> dict[str, object]:
    """``KEY=VALUE`` pairs as control settings, refused (exit 2) when a key is unknown."""
    import difflib

    out: dict[str, object] = {}
    for pair in values:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            fail(f"control set expects KEY=VALUE, got {pair!r}", ExitCode.INVALID)
        if key not in SETTABLE:
            close = difflib.get_close_matches(key, SETTABLE, n=1)
            fail(f"control set: unknown setting {key!r}" + (f" — did you mean {close[0]!r}?" if close else
                                                            f" (one of: {', '.join(SETTABLE)})"), ExitCode.INVALID)
        out[key] = None if value.strip().lower() in ("none", "null", "") else value.strip()
    return out


def _go(coroutine: object) -> RunStatus:
    """Run one of this module's coroutines against the Prefect server the commands use."""
    from prefect_agentenv.commands._prefect_server import configured_api_url, use_prefect_server

    if use_prefect_server(running_only=True) is None and configured_api_url() is None:
        coroutine.close()  # type: ignore[attr-defined]
        fail("no Prefect server to ask: a benchmark run in progress records on the agentenv home's local server "
             "(prefect-agentenv server status) or on PREFECT_API_URL's; neither is running here", ExitCode.INVALID)
    return asyncio.run(coroutine)  # type: ignore[arg-type]


async def _status(run: str) -> RunStatus:
    from prefect.client.orchestration import get_client

    from prefect_agentenv.flows.control.channel import ControlChannel

    async with get_client() as client:
        return await ControlChannel(client).find(run)


def _change(run: str, settings: dict[str, object], reason: str | None, wait: float) -> None:
    status = _go(_send(run, settings, None, reason, wait))
    changed = {k: status.applied.get(k) for k in settings}
    applied = all(status.applied.get(k) == v for k, v in _typed(settings).items())
    shown = ", ".join(f"{k}={_text(v)}" for k, v in changed.items())
    typer.echo(f"run {status.run_id} ({status.slug}): {shown}" + ("" if applied else
               " — sent; the run applies it within seconds (prefect-agentenv control status shows it)"))


def _request(run: str, request: dict[str, object], reason: str | None, wait: float) -> None:
    request_id = uuid.uuid4().hex[:12]
    status = _go(_send(run, None, {"id": request_id, **request}, reason, wait))
    outcome = status.applied_requests.get(request_id)
    if outcome is None:
        typer.echo(f"run {status.run_id} ({status.slug}): {request['action']} sent; the run applies it within seconds")
        return
    typer.echo(f"run {status.run_id} ({status.slug}): {request['action']}: {outcome}")
    if outcome.startswith("refused"):
        raise typer.Exit(ExitCode.FAILED)


async def _send(run: str, settings: dict[str, object] | None, request: dict[str, object] | None,
                reason: str | None, wait: float) -> RunStatus:
    """Write the change to the run's control Variable, then wait (up to ``wait`` s) until its status shows it."""
    from prefect.client.orchestration import get_client

    from prefect_agentenv.flows.control.channel import ControlChannel

    async with get_client() as client:
        channel = ControlChannel(client)
        found = await channel.find(run)
        if found.state == "finished":
            fail(f"run {found.run_id} of {found.slug!r} has finished: there is nothing to change (bench --resume "
                 f"{found.run_id} runs what is missing or errored again)", ExitCode.INVALID)
        state = await _current(channel, found)
        state = _updated(state, settings, request, reason, found)
        await channel.write_control(state)
        return await _applied(channel, found.run_id, settings, request, wait) or found


async def _current(channel: ControlChannel, found: RunStatus) -> ControlState:
    from prefect_agentenv.flows.control.state import ControlState

    state, problem = await channel.read_control(found.run_id)
    if state is not None:
        return state
    # Unreadable (edited into an invalid value in the UI): start again from what the run applies.
    return ControlState.model_validate({**found.applied, "run_id": found.run_id, "slug": found.slug,
                                        "flow_run_id": found.flow_run_id})


def _updated(state: ControlState, settings: dict[str, object] | None, request: dict[str, object] | None,
             reason: str | None, found: RunStatus) -> ControlState:
    """The control state with the change, who made it, why and a new stamp (requests already applied dropped)."""
    from pydantic import ValidationError

    from prefect_agentenv.flows.control.channel import new_stamp, operator
    from prefect_agentenv.flows.control.state import ControlRequest, ControlState

    data = state.model_dump(mode="json")
    data.update(settings or {})
    pending = [r for r in state.requests if r.id not in found.applied_requests]
    if request is not None:
        pending.append(ControlRequest.model_validate({**request, "by": operator(), "reason": reason}))
    data.update(requests=[r.model_dump(mode="json") for r in pending], reason=reason, changed_by=operator(),
                stamp=new_stamp())
    try:
        return ControlState.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']} (got {e['input']!r})"
                             for e in exc.errors())
        fail(f"control set: {problems}", ExitCode.INVALID)


async def _applied(channel: ControlChannel, run_id: str, settings: dict[str, object] | None,
                   request: dict[str, object] | None, wait: float) -> RunStatus | None:
    """The run's status once it shows the change, or the last one read when ``wait`` ran out."""
    deadline = time.monotonic() + wait
    last = None
    wanted = _typed(settings or {})
    while True:
        last = await channel.read_status(run_id) or last
        if last is not None:
            if request is not None and str(request["id"]) in last.applied_requests:
                return last
            if request is None and all(last.applied.get(k) == v for k, v in wanted.items()):
                return last
        if time.monotonic() >= deadline:
            return last
        await asyncio.sleep(0.5)


def _typed(settings: dict[str, object]) -> dict[str, object]:
    """The settings as the status Variable writes them back (numbers as numbers)."""
    out: dict[str, object] = {}
    for k, v in settings.items():
        try:
            out[k] = json.loads(v) if isinstance(v, str) else v
        except ValueError:
            out[k] = v
    return out


def _text(value: object) -> str:
    return "none" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def _status_text(s: RunStatus) -> str:
    """One screen: the run, its state, the settings in effect, the counts and the running task runs."""
    a, c = s.applied, s.counts
    state = "finished" if s.state == "finished" else "PAUSED" if a.get("paused") else "running"
    if a.get("hold_model_calls"):
        state += f", agents held at their next model call ({c.get('held_calls', 0)} waiting)"
    lines = [f"benchmark {s.slug}  run {s.run_id}  {state}",
             f"concurrency {a.get('concurrency')}  timeout_seconds {_text(a.get('timeout_seconds'))}  "
             f"budget_usd {_text(a.get('budget_usd'))}  budget_tokens {_text(a.get('budget_tokens'))}"]
    limits = [f"{k} {v}" for k, v in a.items() if k.startswith("limit_") and v is not None]
    lines.append("limits: " + (", ".join(limits) if limits else "none"))
    lines.append(f"task runs: {c.get('running', 0)} running, {c.get('queued', 0)} queued, {c.get('done', 0)} done "
                 f"({c.get('errored', 0)} errored) of {c.get('total', 0)}")
    lines += [f"  running: {name}" for name in s.running]
    if s.results_url:
        lines.append(f"results: {s.results_url}" + (f" (store: {s.store})" if s.store else ""))
    if s.flow_run_id:
        lines.append(f"flow run: {s.flow_run_id}")
    return "\n".join(lines)
