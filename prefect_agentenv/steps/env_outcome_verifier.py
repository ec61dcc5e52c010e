"""env_outcome_verifier: check an env's end state with a verify script stored as a file artifact."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Literal

from pydantic import Field

from prefect_agentenv.context import RunContext
from prefect_agentenv.exceptions import AgentEnvError, AgentTimeoutError, StepError
from prefect_agentenv.grading import outcome_script
from prefect_agentenv.grading.verification import normalize_row, prompt_error, scored, skip_reason, skipped
from prefect_agentenv.run_services.clients import artifact_store, as_step_error, deployed_env
from prefect_agentenv.runtime.resources.leftovers import RUN_MARKER
from prefect_agentenv.runtime.resources.run import current_run
from prefect_agentenv.steps.base import EnvRef, PromptRef, VerifierStep
from prefect_agentenv.steps.registry import StepDefinition


class EnvOutcomeVerifierStep(VerifierStep):
    """Runs ``async def verify(mcp_url[, run]) -> rows`` in its own process against an env."""

    type: Literal["env_outcome_verifier"] = "env_outcome_verifier"
    rows_from_output = True
    env_id: EnvRef
    """The deployed env whose state is checked."""
    script_artifact_id: str = Field(min_length=1)
    """File artifact holding the verify script (a Python file)."""
    prompt_id: PromptRef | None = None
    """Optional PromptResponse passed to the script as ``run``."""
    timeout_seconds: float = Field(default=120, gt=0)
    """The script's process is killed after this long."""

    reference_aliases = {"file_artifact_id": "script_artifact_id", "file_artifact_version": "version"}
    artifact_field = "script_artifact_id"


async def run(step: EnvOutcomeVerifierStep, ctx: RunContext) -> RunContext:
    """Fetch the script, run it against the env's MCP endpoint in a child process, score its rows."""
    env = deployed_env(ctx, step.env_id, step)
    response = ctx.prompt_responses.get(step.prompt_id) if step.prompt_id else None
    reason = skip_reason(response, skip_on_truncated=step.skip_on_truncated, skip_on_timeout=step.skip_on_timeout)
    verifications = ctx.metadata.verifications
    if reason:
        verifications[step.verifier_id] = skipped(reason, weight=step.weight, fmt="outcome")
        return ctx
    if response is not None and response.error:
        verifications[step.verifier_id] = prompt_error(response, weight=step.weight, fmt="outcome")
        return ctx
    folder = current_run().step_folder("verifiers", step.id)
    script = await _fetch_script(step, folder)
    run_file = None
    if response is not None:
        run_file = folder / "run.json"
        run_file.write_text(response.model_dump_json(), encoding="utf-8")
    raw_rows = await _run_script(step, script, env.mcp_url, run_file, folder)
    try:
        rows = [normalize_row(r, i) for i, r in enumerate(raw_rows)]
    except ValueError as exc:
        raise StepError(f"verify script {step.script_artifact_id}: {exc}", step=step) from None
    if not rows:
        raise StepError(f"verify script {step.script_artifact_id} returned no rows", step=step)
    verifications[step.verifier_id] = scored(rows, aggregator=step.score_aggregator, weight=step.weight,
                                             fmt="outcome", env_id=step.env_id)
    return ctx


async def _fetch_script(step: EnvOutcomeVerifierStep, folder: Path) -> Path:
    store = await artifact_store(current_run())
    try:
        meta = await asyncio.to_thread(store.get_metadata, step.script_artifact_id, step.version or "latest")
        py = [f.name for f in meta.files if f.name.endswith(".py")]
        if meta.kind != "file" or len(py) != 1:
            raise StepError(f"artifact '{meta.id}@{meta.version}' must be a file artifact holding one .py file "
                            f"(it holds: {', '.join(f.name for f in meta.files) or 'nothing'})",
                            step=step)
        data = await asyncio.to_thread(store.read_file, meta, py[0])
    except StepError:
        raise
    except AgentEnvError as exc:
        raise as_step_error(exc, step, f"fetching verify script '{step.script_artifact_id}'") from exc
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "verify.py"
    script.write_bytes(data)
    return script


async def _run_script(step: EnvOutcomeVerifierStep, script: Path, mcp_url: str, run_file: Path | None,
                      folder: Path) -> list[object]:
    """Run the script in its own process group so a hang or crash costs only this step."""
    from prefect_agentenv.runtime.launch.command import run_bounded

    argv = [*_interpreter(), str(script), mcp_url]
    if run_file:
        argv.append(str(run_file))
    # scoring_env reaches only the script's process; its values were resolved when the step started
    # and are redacted from every report.
    run = current_run()
    env = {**os.environ, **step.scoring_env, RUN_MARKER: run.run_id}
    try:
        done = await run_bounded(argv, cwd=folder, env=env, timeout=step.timeout_seconds)
    except OSError as exc:
        raise StepError(f"cannot start the verify script's interpreter {argv[0]!r} (verify_python): {exc}",
                        step=step) from None
    if done.timed_out:
        raise AgentTimeoutError(f"verify script {step.script_artifact_id} did not finish within "
                                f"{step.timeout_seconds:g}s and was stopped", step=step)
    (folder / "stderr.txt").write_bytes(done.stderr)
    return _rows_from(step, done.returncode, done.stdout.decode(errors="replace"),
                      done.stderr.decode(errors="replace"))


def _interpreter() -> list[str]:
    """The configured Python (``--override verify_python=`` first, then the
    ``PREFECT_AGENTENV_VERIFY_PYTHON`` setting; it may not have this package) or this one, running
    the runner file by path (``-P``: its folder stays off sys.path).

    By path and not as ``-m prefect_agentenv.grading.outcome_script``: the runner needs only the
    standard library, and ``-m`` first imports the ``grading`` package (its models, pydantic, the
    MCP types), ~0.15 s of CPU in the script's process before the script starts, on the step's
    critical path. A script that imports this package still finds it: only its own folder is off
    the path.
    """
    # Settings sit on Prefect's settings base: read on use, so validating documents stays light.
    from prefect_agentenv.settings import get_settings

    python = current_run().overrides.verify_python or get_settings().verify_python or sys.executable
    return [python, "-P", outcome_script.__file__]


def _rows_from(step: EnvOutcomeVerifierStep, code: int | None, out: str, err: str) -> list[object]:
    line = next((ln for ln in reversed(out.splitlines()) if ln.startswith(outcome_script.MARKER)), None)
    if code != 0 or line is None:
        last = "\n".join(err.strip().splitlines()[-8:]) or "(no output)"
        raise StepError(f"verify script {step.script_artifact_id} failed (exit {code}):\n{last}",
                        step=step)
    try:
        rows = json.loads(line[len(outcome_script.MARKER):])
    except ValueError as exc:
        raise StepError(f"verify script {step.script_artifact_id}: its result line is not valid JSON ({exc})",
                        step=step) from None
    if not isinstance(rows, list):
        raise StepError(f"verify script {step.script_artifact_id} must return a list of rows, got "
                        f"{type(rows).__name__}", step=step)
    return rows


definition = StepDefinition(EnvOutcomeVerifierStep, run)
