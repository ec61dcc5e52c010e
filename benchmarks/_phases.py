#!/usr/bin/env python
"""Where one ``prefect-agentenv run`` spends its time: the CLI, instrumented from outside.

Started by ``task_overhead.py`` instead of the console script, with the same arguments::

    BENCH_T0=<unix time of the spawn> BENCH_SPANS=out.json python benchmarks/_phases.py run TASK --report R

Before handing over to the CLI it wraps a list of the package's functions (by name, in every
module that imported them) with timers, so the code under test is unchanged. Each span records
its label, the step it ran in (a context variable set around each step's body), and its start and
end in seconds since the spawn, and this process's CPU (``time.process_time()``) at both: CPU is
what a loaded machine distorts least, and for the phases that run alone (imports, the flow's start,
its end, the exit) it says what the phase itself costs. The CPU of the child processes reaped by
then (the env, the agent, a verify script) is written at exit too. Functions the code does not have
(any more) are skipped, so the same script measures the code before and after a change. The spans
are written at exit.
"""

from __future__ import annotations

import atexit
import contextvars
import functools
import importlib
import inspect
import json
import os
import resource
import sys
import time
from typing import Any

T0 = float(os.environ.get("BENCH_T0") or time.time())
SPANS: list[dict[str, Any]] = []
MARKS: dict[str, float] = {"entered": time.time() - T0}
CPU_MARKS: dict[str, float] = {"entered": time.process_time()}
_step: contextvars.ContextVar[str | None] = contextvars.ContextVar("bench_step", default=None)

# (module, attribute path, label). A label starting with "step:" also names the current step.
TARGETS: list[tuple[str, str, str]] = [
    ("prefect_agentenv.cli", "_run_flow", "run command: flow call"),  # older trees
    ("prefect_agentenv.cli_run", "_run", "run command: flow call"),  # older trees
    ("prefect_agentenv.commands.run_flow", "_run", "run command: flow call"),
    ("prefect_agentenv.flows.agent_task", "run_task_document", "flow body"),  # older trees
    ("prefect_agentenv.flows.task_runner", "run_task_document", "flow body"),
    ("prefect_agentenv.flows.agent_task", "_execute_as_prefect_task", "step: prefect task"),  # older trees
    ("prefect_agentenv.flows.agent_task", "_run_step", "step: body"),  # older trees
    ("prefect_agentenv.flows.adapters.step_tasks", "execute_as_prefect_task", "step: prefect task"),
    ("prefect_agentenv.flows.adapters.step_tasks", "run_step", "step: body"),  # older trees
    ("prefect_agentenv.flows.adapters.step_tasks", "run_body", "step: body"),
    ("prefect_agentenv.documents", "validate_file", "validate the document"),
    ("prefect_agentenv.runtime.resources.leftovers", "sweep_dead_runs", "sweep dead runs"),
    ("prefect_agentenv.steps.env_outcome_verifier", "_fetch_script", "verify script: fetch"),
    ("prefect_agentenv.steps.env_outcome_verifier", "_run_script", "verify script: its process"),
    ("prefect.concurrency._asyncio", "aacquire_concurrency_slots_with_lease", "Prefect: tag concurrency lease"),
    ("prefect_agentenv.runtime.resolve", "resolve_env", "resolve env (block lookup)"),  # older trees
    ("prefect_agentenv.runtime.resolve", "resolve_agent", "resolve agent (block lookup)"),  # older trees
    ("prefect_agentenv.runtime.models", "resolve_model_endpoint", "model endpoint (block lookup)"),  # older trees
    ("prefect_agentenv.resolution.servers", "resolve_env", "resolve env (block lookup)"),
    ("prefect_agentenv.resolution.servers", "resolve_agent", "resolve agent (block lookup)"),
    ("prefect_agentenv.resolution.models", "resolve_model_endpoint", "model endpoint (block lookup)"),
    ("prefect_agentenv.run_services.agents", "_start_mock_model", "mock model start"),
    ("prefect_agentenv.runtime.launch.process", "_spawn", "launch (fork/exec)"),
    ("prefect_agentenv.runtime.launch.base", "wait_until_ready", "ready (polling)"),
    ("prefect_agentenv.steps.deploy_env", "_mcp_url", "env card"),
    ("prefect_agentenv.runtime.resources.sandbox", "create_sandbox", "sandbox folder"),
    ("prefect_agentenv.run_services.agents", "configure_agent", "agent config (extensions)"),
    ("prefect_agentenv.protocols.env", "EnvClient.data_reset", "data plane: reset"),
    ("prefect_agentenv.protocols.env", "EnvClient.data_add", "data plane: add"),
    ("prefect_agentenv.protocols.env", "EnvClient.export_state", "data plane: get"),
    ("prefect_agentenv.run_services.clients", "artifact_store", "artifact store open"),
    ("prefect_agentenv.protocols.a2a", "A2AClient.send", "prompt (A2A send + wait)"),
    ("prefect_agentenv.steps.prompt_agent", "_store_trajectory", "trajectory fetch + store"),
    ("prefect_agentenv.steps.prompt_agent", "_store_turns", "turns store"),
    ("prefect_agentenv.runtime.resources.teardown", "TeardownRegistry.stop_all", "teardown"),
    ("prefect_agentenv.engine.reporting", "build_report", "report: build"),
    ("prefect_agentenv.results.task_report", "write_report", "report: write"),
    ("prefect_agentenv.flows.agent_task", "_upload_report", "report: upload to store"),  # older trees
    ("prefect_agentenv.flows.task_runner", "_upload_report", "report: upload to store"),
    ("prefect_agentenv.flows.ui.task", "publish_artifacts", "Prefect artifacts"),
    ("prefect_agentenv.engine.submission_record", "capture_quietly", "submission: capture"),
    ("prefect_agentenv.flows.task_runner", "_store_submission", "submission: store"),
]


def _now() -> float:
    return time.time() - T0


def _wrap(fn: Any, label: str) -> Any:
    names_step = label.startswith("step:")

    def record(start: tuple[float, float], token: Any) -> None:
        SPANS.append({"label": label, "step": _step.get(), "start": round(start[0], 4), "end": round(_now(), 4),
                      "cpu_start": round(start[1], 4), "cpu_end": round(time.process_time(), 4)})
        if token is not None:
            _step.reset(token)

    def enter(args: tuple[Any, ...]) -> Any:
        if names_step and args and hasattr(args[0], "id"):
            return _step.set(str(args[0].id))
        return None

    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def awrapper(*args: Any, **kwargs: Any) -> Any:
            token, start = enter(args), (_now(), time.process_time())
            try:
                return await fn(*args, **kwargs)
            finally:
                record(start, token)
        return awrapper

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        token, start = enter(args), (_now(), time.process_time())
        try:
            return fn(*args, **kwargs)
        finally:
            record(start, token)
    return wrapper


def instrument() -> list[str]:
    """Wrap every target that exists; return the labels that were skipped."""
    skipped = []
    for module_name, path, label in TARGETS:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            skipped.append(label)
            continue
        owner: Any = module
        *parents, attr = path.split(".")
        for p in parents:
            owner = getattr(owner, p, None)
        original = getattr(owner, attr, None) if owner is not None else None
        if original is None:
            skipped.append(label)
            continue
        wrapped = _wrap(original, label)
        setattr(owner, attr, wrapped)
        if not parents:  # also where other modules imported it by name
            for name, mod in list(sys.modules.items()):
                if name.startswith("prefect_agentenv") and getattr(mod, attr, None) is original:
                    setattr(mod, attr, wrapped)
    return skipped


def _dump() -> None:
    MARKS["exit"] = _now()
    CPU_MARKS["exit"] = time.process_time()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = os.environ.get("BENCH_SPANS")
    if out:
        with open(out, "w", encoding="utf-8") as fh:
            json.dump({"marks": MARKS, "cpu_marks": CPU_MARKS, "children_cpu": children.ru_utime + children.ru_stime,
                       "spans": SPANS, "skipped": SKIPPED}, fh)


if __name__ == "__main__":
    import prefect_agentenv.cli as cli

    MARKS["cli imported"] = _now()
    CPU_MARKS["cli imported"] = time.process_time()
    # What `run` imports when it needs it (the flow, the steps): imported now so it can be wrapped;
    # the time is reported as its own mark, so "imports" stays comparable before and after.
    import prefect_agentenv.flows.agent_task  # noqa: F401

    for name in ("deploy_env", "deploy_agent", "load_artifact", "prompt_agent", "env_state_verifier",
                 "env_outcome_verifier"):
        importlib.import_module(f"prefect_agentenv.steps.{name}")
    MARKS["flow imported"] = _now()
    CPU_MARKS["flow imported"] = time.process_time()
    SKIPPED = instrument()
    atexit.register(_dump)
    sys.argv = ["prefect-agentenv", *sys.argv[1:]]
    cli.main()
