"""run_code: run a Python script artifact beside an env or in a sandbox; its JSON result goes in the context."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator

from prefect_agentenv.context import RunContext
from prefect_agentenv.exceptions import AgentEnvError, AgentTimeoutError, StepError
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.run_services.clients import artifact_store, as_step_error, deployed_env
from prefect_agentenv.run_services.sandboxes import sandbox_target
from prefect_agentenv.runtime.launch import script_runner
from prefect_agentenv.runtime.resources.leftovers import RUN_MARKER
from prefect_agentenv.runtime.resources.run import current_run, safe_segment
from prefect_agentenv.steps.base import DEFAULT_AGENT_NAME, AgentRef, EnvRef, SandboxPath, SandboxRef, StepModel
from prefect_agentenv.steps.registry import StepDefinition

if TYPE_CHECKING:
    from prefect_agentenv.runtime.launch.command import CommandResult

logger = logging.getLogger("prefect_agentenv.steps.run_code")

RUN_FOLDER = "/tmp/agentenv_run_code"
"""Sandbox folder each run_code step stages its script in (``<RUN_FOLDER>/<step id>``)."""
_KEPT_OUTPUT_BYTES = 64 * 1024
"""What is kept of the script's output: the tail of its stderr names a failure."""


class RunCodeStep(StepModel):
    """Runs ``run(input) -> JSON`` from a script artifact; the result is metadata.script_results[result_id].

    ``input`` is ``{"args", "results", "sandbox_root"?, "env"?}``: the step's args, the results of
    earlier run_code steps, and, beside an env, its ``{id, url, mcp_url}``. Against a sandbox, the
    script runs in a fresh confined copy of it (``sandbox_root`` is the copy's root as the script
    sees it; docs/security.md, "Grading apart").
    """

    type: Literal["run_code"] = "run_code"
    script_artifact_id: str = Field(min_length=1)
    """File artifact (or universe) holding the script; its .py files are staged side by side."""
    script_file: str | None = None
    """The entry file when the artifact holds several .py files (default: the only one, else run.py)."""
    entrypoint: str = Field(default="run", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """Function called with the input."""
    args: Any = None
    """Any JSON, passed as input["args"]."""
    result_id: str | None = None
    """Key of the result in metadata.script_results (the step id when omitted)."""
    timeout_seconds: float = Field(default=300, gt=0)
    """The script's process group is killed after this long."""
    env_id: EnvRef | None = None
    """Run beside this env (a scratch folder of the run); input["env"] gives its addresses."""
    agent_name: AgentRef | None = None
    """Run in this agent's sandbox (cwd: the sandbox root)."""
    sandbox_name: SandboxRef | None = None
    """Run in this deploy_sandbox sandbox (cwd: the sandbox root)."""
    inputs: list[SandboxPath] | None = None
    """With agent_name or sandbox_name: the sandbox paths copied into the fresh confined sandbox the script
    runs in (default: the whole sandbox but the agent's home). The script never runs in the live one."""

    reference_aliases = {"script_artifact_version": "version"}

    @classmethod
    def reference_forms(cls, data: JsonObject, notices: list[str]) -> JsonObject:
        """No target named: the default agent's sandbox, as in AgentEnv; a null timeout is the default."""
        if data.get("timeout_seconds", 0) is None:
            del data["timeout_seconds"]
        if not any(data.get(k) is not None for k in ("env_id", "agent_name", "sandbox_name")):
            data["agent_name"] = DEFAULT_AGENT_NAME
        return data

    @model_validator(mode="after")
    def _one_target(self) -> RunCodeStep:
        if sum(t is not None for t in (self.env_id, self.agent_name, self.sandbox_name)) != 1:
            raise ValueError("give one target: env_id, agent_name or sandbox_name")
        if self.script_file is not None and not self.script_file.endswith(".py"):
            raise ValueError(f"script_file {self.script_file!r} must be a .py file")
        return self


async def run(step: RunCodeStep, ctx: RunContext) -> RunContext:
    """Stage the script and its input, run it in its own process group, keep its JSON result."""
    base = {"args": step.args, "results": dict(ctx.metadata.script_results)}
    if step.env_id is not None:
        result = await _beside_env(step, ctx, base)
    else:
        result = await _in_grading_box(step, ctx, base)
    ctx.metadata.script_results[step.result_id or step.id] = result
    return ctx


async def _beside_env(step: RunCodeStep, ctx: RunContext, payload: JsonObject) -> Any:
    """The task's own code against an env: in a scratch folder of the run, as verify scripts run."""
    from prefect_agentenv.runtime.launch.command import run_bounded

    env = deployed_env(ctx, step.env_id or "", step)
    folder = current_run().step_folder("run_code", step.id)
    info: JsonObject = {"id": env.env_id, "url": env.base_url or env.mcp_url.rsplit("/", 1)[0], "mcp_url": env.mcp_url}
    entry = await _stage(step, folder, {**payload, "env": info})
    argv = [sys.executable, "-P", script_runner.__file__, str(folder), entry, step.entrypoint]
    try:
        done = await run_bounded(argv, cwd=folder, env={**os.environ, RUN_MARKER: current_run().run_id},
                                 timeout=step.timeout_seconds, max_output_bytes=_KEPT_OUTPUT_BYTES)
    except OSError as exc:
        raise StepError(f"script {step.script_artifact_id} could not start: {exc}", step=step) from None
    return _result(step, done, folder)


async def _in_grading_box(step: RunCodeStep, ctx: RunContext, payload: JsonObject) -> Any:
    """Against a sandbox's files: in a fresh confined copy of the sandbox (``runtime/confinement/grading_box.py``), with
    the script staged in the copy, so the agent never sees it and never changes what it runs."""
    from prefect_agentenv.runtime.confinement.grading_box import open_box

    sandbox, extra_env, label = sandbox_target(ctx, step, agent_name=step.agent_name, sandbox_name=step.sandbox_name)
    run_ = current_run()
    try:
        box = await asyncio.to_thread(open_box, sandbox, run_.step_folder("grading", step.id), inputs=step.inputs)
    except AgentEnvError as exc:
        raise StepError(f"inputs: {exc}", step=step) from None
    try:
        staging = f"{RUN_FOLDER}/{safe_segment(step.id)}"
        folder = box.sandbox.path(staging)
        entry = await _stage(step, folder, {**payload, "sandbox_root": box.root_inside})
        logger.info("run_code %s runs on a copy of %s: %s", step.id, label, box.record().as_json())
        argv = [sys.executable, "-P", script_runner.__file__, box.inside(staging), entry, step.entrypoint]
        try:
            done = await box.run(argv, cwd=".", env=extra_env, run_id=run_.run_id, timeout=step.timeout_seconds,
                                 max_output_bytes=_KEPT_OUTPUT_BYTES)
        except OSError as exc:
            raise StepError(f"script {step.script_artifact_id} could not start: {exc}", step=step) from None
        return _result(step, done, folder)
    finally:
        if not run_.keep:
            box.remove()


async def _stage(step: RunCodeStep, folder: Path, payload: JsonObject) -> str:
    """Download the artifact's files into a fresh folder, write input.json, return the entry file."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    store = await artifact_store(current_run())
    try:
        meta = await asyncio.to_thread(store.get_metadata, step.script_artifact_id, step.version or "latest")
        written = await asyncio.to_thread(store.download, meta, folder / "script")
    except AgentEnvError as exc:
        raise as_step_error(exc, step, f"fetching script artifact '{step.script_artifact_id}'") from exc
    names = sorted(p.relative_to(folder / "script").as_posix() for p in written)
    entry = _entry(step, [n for n in names if n.endswith(".py")], names)
    (folder / "input.json").write_text(json.dumps(payload, default=str), encoding="utf-8")
    return f"script/{entry}"


def _entry(step: RunCodeStep, py: list[str], names: list[str]) -> str:
    if step.script_file is not None:
        if step.script_file not in py:
            raise StepError(f"script_file '{step.script_file}' is not in '{step.script_artifact_id}' "
                            f"(its .py files: {', '.join(py) or 'none'})", step=step)
        return step.script_file
    if len(py) == 1:
        return py[0]
    if "run.py" in py:
        return "run.py"
    raise StepError(f"artifact '{step.script_artifact_id}' holds {', '.join(names) or 'nothing'}: name the entry "
                    "with script_file", step=step)


def _result(step: RunCodeStep, done: CommandResult, folder: Path) -> Any:
    """The script's JSON result; a timeout or a failure is the step's error, with the tail of its stderr."""
    if done.timed_out:
        raise AgentTimeoutError(f"script {step.script_artifact_id} did not finish within {step.timeout_seconds:g}s "
                                "and was stopped", step=step)
    output = folder / "output.json"
    if done.returncode != 0 or not output.is_file():
        tail = "\n".join(done.stderr.decode(errors="replace").strip().splitlines()[-8:]) or "(no output)"
        raise StepError(f"script {step.script_artifact_id} failed (exit {done.returncode}):\n{tail}", step=step)
    return json.loads(output.read_text(encoding="utf-8"))


definition = StepDefinition(RunCodeStep, run)
