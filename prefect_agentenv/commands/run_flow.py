"""``prefect-agentenv run``: one task as a Prefect flow run, whatever way it ends.

Every ending gives one exit code, one line on stderr and, except after SIGKILL, the report
(docs/reliability.md, "How a run can stop"): 0 completed, 1 failed, 3 cancelled from Prefect, 130 Ctrl-C,
143 SIGTERM. What a run killed outright left behind is swept when the next run starts.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NoReturn

import httpx
import typer

from prefect_agentenv.documents import TaskDocument
from prefect_agentenv.engine.reporting import build_report
from prefect_agentenv.exit_codes import ExitCode
from prefect_agentenv.flows.adapters import api_health
from prefect_agentenv.flows.adapters.stale import mark_dead_flow_runs_crashed
from prefect_agentenv.flows.agent_task import agent_task
from prefect_agentenv.grading.judge_setup import MOCK_JUDGE_NOTE, mock_judged
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.results.task_report import write_report
from prefect_agentenv.runtime.resources.leftovers import sweep_dead_runs
from prefect_agentenv.runtime.resources.stop import DESCRIPTIONS, EXIT_CODES
from prefect_agentenv.settings import get_settings

logger = logging.getLogger("prefect_agentenv.cli")

LOST_API_GRACE_SECONDS = 2.0
"""How long a run whose Prefect API was lost waits for Prefect to record its end before leaving."""


def run_task_cli(doc: TaskDocument, *, overrides: dict[str, str], keep: bool, report: Path | None) -> int:
    """Run ``doc`` and return the exit code; never raises for an expected ending."""
    swept = sweep_dead_runs(get_settings().runs_dir)  # logs one warning per dead run it cleaned up
    _one_line_logs()
    try:
        data = asyncio.run(_run(doc, overrides, keep, report, [d.flow_run_id for d in swept if d.flow_run_id]))
    except KeyboardInterrupt:
        return _ended_early(doc, report, "interrupted (Ctrl-C) before the run started; nothing is left running", 130)
    except Exception as exc:  # noqa: BLE001 - one line instead of a traceback, the report still written
        logger.debug("the run ended with an error outside its steps", exc_info=exc)
        written = _report_of_this_process(report)
        if written is None:
            return _ended_early(doc, report, f"the run could not start: {_describe(exc)}", 1)
        _leave_without_prefect(written, report, _describe(exc))  # the steps ran, the API went away
    if not isinstance(data, dict) or "status" not in data:
        return _ended_early(doc, report, f"the run crashed before it could report: {_one_line(data)}", 1)
    print_summary(data, report)
    if api_health.troubles():
        typer.echo(f"warning: the Prefect API could not be reached at times during the run "
                   f"({api_health.troubles()[0]}); Prefect may be missing some of its logs or events", err=True)
    reason = data.get("stop_reason")
    if reason:
        where = f"; report: {report}" if report else ""
        typer.echo(f"{DESCRIPTIONS.get(reason, reason)}: the steps in flight were stopped and everything the run "
                   f"started was torn down{where}", err=True)
        return EXIT_CODES.get(reason, ExitCode.FAILED)
    return 0 if data["status"] == "completed" else 1


async def _run(doc: TaskDocument, overrides: dict[str, str], keep: bool, report: Path | None,
               dead_flow_runs: list[str]) -> Any:
    if dead_flow_runs:
        await mark_dead_flow_runs_crashed(dead_flow_runs)
    flow_run = asyncio.ensure_future(agent_task(doc, overrides=overrides, keep=keep,
                                                report_path=str(report) if report else None, return_state=True))
    lost = asyncio.ensure_future(api_health.wait_lost())
    await asyncio.wait({flow_run, lost}, return_when=asyncio.FIRST_COMPLETED)
    if not flow_run.done():
        # The report is on disk and the API is gone: Prefect would now retry, call after call, to
        # record the run's end, ship its logs and events. Give it a moment, then leave.
        await asyncio.wait({flow_run}, timeout=LOST_API_GRACE_SECONDS)
    if not flow_run.done() and (written := _report_of_this_process(report)) is not None:
        _leave_without_prefect(written, report, lost.result())
    lost.cancel()
    state = await flow_run
    return await state.aresult(raise_on_failure=False)


def _leave_without_prefect(written: Path, report: Path | None, why: str) -> NoReturn:
    """The run finished and wrote its report, but Prefect's API is gone: one line, and exit now
    with the run's own code (0 completed, 1 failed) instead of retrying to reach the API."""
    data = json.loads(written.read_text(encoding="utf-8"))
    print_summary(data, report)
    typer.echo(f"warning: the run finished but the Prefect API was lost ({why}); Prefect could not record "
               f"its end; its report is {written}", err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    # Everything the run started is stopped and its report is on disk; exiting skips Prefect's own
    # drain of logs and events, which would retry against an API that is gone.
    os._exit(0 if data.get("status") == "completed" else 1)


def _ended_early(doc: TaskDocument, report: Path | None, message: str, code: int) -> int:
    """One line, and a report saying why, for a run that ended before it could write its own."""
    typer.echo(f"error: {message}" if code == 1 else message, err=True)
    if report is not None and not report.exists():
        stub = build_report(task_id=doc.id, flow_run_id=None, result=None,
                            started_at=datetime.now(timezone.utc).isoformat(), duration_s=0.0, teardown=[],
                            warnings=[], error=message)
        try:
            write_report(stub, report)
        except OSError as exc:
            typer.echo(f"error: could not write {report}: {exc.strerror}", err=True)
    return code


class _NoTraceback(logging.Filter):
    """Log records keep their message but lose their traceback (the CLI promises one line per
    problem); ``PREFECT_LOGGING_LEVEL=DEBUG`` keeps them for debugging."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and not logging.getLogger(record.name).isEnabledFor(logging.DEBUG):
            record.exc_info, record.exc_text = None, None
        return True


def _one_line_logs() -> None:
    """Console log lines without tracebacks, and without Prefect's reports of an unreachable API
    (the CLI says that once). A handler that fails to emit (Prefect's log shipping to an API that
    is gone) stays quiet instead of printing to stderr."""
    logging.raiseExceptions = False
    for logger_ in [logging.getLogger(), *[lg for lg in logging.Logger.manager.loggerDict.values()
                                           if isinstance(lg, logging.Logger)]]:
        for handler in logger_.handlers:
            if isinstance(handler, logging.StreamHandler):
                handler.addFilter(api_health.QuietApiFailures())  # first: it reads the traceback's error
                handler.addFilter(_NoTraceback())


def _report_of_this_process(report: Path | None) -> Path | None:
    """The report this process's run wrote, if it got that far."""
    if report is not None and report.is_file():
        return report
    for owner in sorted(get_settings().runs_dir.glob("*/owner.json"), key=lambda p: p.stat().st_mtime, reverse=True):
        try:
            mine = json.loads(owner.read_text(encoding="utf-8")).get("pid") == os.getpid()
        except (OSError, ValueError):
            continue
        if mine and (owner.parent / "report.json").is_file():
            return owner.parent / "report.json"
    return None


def _describe(exc: BaseException) -> str:
    """One sentence for an error that is not a step's: an unreachable API says where it was looked for."""
    if isinstance(exc, httpx.TransportError) or isinstance(exc.__cause__, httpx.TransportError):
        from prefect.settings import get_current_settings

        url = get_current_settings().api.url or "the temporary Prefect server"
        return f"the Prefect API at {url} is unreachable ({_one_line(exc)})"
    if isinstance(exc, httpx.HTTPStatusError):
        return f"the Prefect API answered {exc.response.status_code} to {exc.request.method} {exc.request.url.path}"
    return _one_line(exc)


def _one_line(value: object) -> str:
    text = str(value).strip() or type(value).__name__
    first = text.splitlines()[0]
    return f"{type(value).__name__}: {first}" if isinstance(value, BaseException) else first


def print_summary(data: JsonObject, report: Path | None) -> None:
    """The run's outcome, its steps and where the report is (``data``: the run's summary, as JSON)."""
    score = "-" if data.get("score") is None else f"{data['score']:.3f}"
    context = data.get("context")
    metadata = context.get("metadata") if isinstance(context, dict) else None
    mock = f" ({MOCK_JUDGE_NOTE})" if isinstance(metadata, dict) and mock_judged(metadata.get("verifications")) else ""
    typer.echo(f"task {data['task_id']}: {data['outcome']} score={score}{mock} status={data['status']} "
               f"({data['duration_s']:.1f}s)")
    steps = data.get("steps")
    for s in steps if isinstance(steps, list) else []:
        if not isinstance(s, dict):
            continue
        err = f"  {s['error']}" if s.get("error") else ""
        typer.echo(f"  {s['state']:<10} {s['id']} ({s['type']}){err}")
    if data.get("error"):
        typer.echo(f"error: {data['error']}")
    if report:
        typer.echo(f"report: {report}")


__all__ = ["print_summary", "run_task_cli"]
