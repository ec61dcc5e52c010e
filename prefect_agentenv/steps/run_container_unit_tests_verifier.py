"""run_container_unit_tests_verifier: run a test command in a docker container and score its exit or reward file."""

from __future__ import annotations

import json
import shlex
from typing import Literal

from pydantic import Field

from prefect_agentenv.context import RunContext
from prefect_agentenv.exceptions import StepError
from prefect_agentenv.grading.aggregate import RowResult, VerificationRow
from prefect_agentenv.grading.verification import scored
from prefect_agentenv.jsontypes import JsonObject, JsonValue
from prefect_agentenv.steps.base import VerifierStep
from prefect_agentenv.steps.registry import StepDefinition

_TAIL = 2000


class RunContainerUnitTestsVerifierStep(VerifierStep):
    """Runs setup_commands then command in a running container (the local docker daemon's).

    Scored by the exit code (0 passes), or, with reward_path, by the number in that file (0.0–1.0;
    1.0 passes), as Harbor-style test scripts write it.
    """

    type: Literal["run_container_unit_tests_verifier"] = "run_container_unit_tests_verifier"
    container_name: str = Field(min_length=1)
    """Name or id of the running container, on the docker daemon this runner talks to."""
    command: str = Field(min_length=1)
    """Shell command that runs the tests (``bash -c``)."""
    setup_commands: list[str] = Field(default_factory=list)
    """Commands run first, each of which must succeed (install test dependencies, say)."""
    user: str = "root"
    """User the commands run as in the container."""
    timeout_seconds: float = Field(default=300, gt=0)
    """Bound on setup and tests together."""
    env_vars: dict[str, str] = Field(default_factory=dict)
    """Environment variables of the commands."""
    result_paths: list[str] = Field(default_factory=list)
    """Files read back from the container after the tests (kept in the verification, parsed when JSON)."""
    reward_path: str | None = None
    """File holding the score; removed before the tests so a stale one never counts."""

    accepted_but_ignored = ("sandbox_name", "seed")
    reference_aliases = {"timeout_sec": "timeout_seconds"}


async def run(step: RunContainerUnitTestsVerifierStep, ctx: RunContext) -> RunContext:
    """Check the daemon, run setup and tests, read result files, record the row; a failed run raises after."""
    from prefect_agentenv.runtime.docker import DockerLauncher

    if not await DockerLauncher.available():
        raise StepError(f"{step.type} runs tests in a docker container, and no docker daemon answers here "
                        "(`docker info` failed): run it where docker is available", step=step)
    code, out, err = await _run_tests(step)
    files = {path: await _read(step, path) for path in _paths(step)}
    row, passed = _row(step, code, files)
    ctx.metadata.verifications[step.verifier_id] = scored(
        [row.model_dump()], aggregator=step.score_aggregator, weight=step.weight, fmt="container_tests", exit_code=code,
        stdout_tail=out[-_TAIL:], stderr_tail=err[-_TAIL:], extracted_files=files)
    if not passed and step.reward_path is None:
        raise StepError(f"tests in container '{step.container_name}' exited {code}: {err.strip()[-300:]}",
                        step=step, context=ctx)
    return ctx


async def _run_tests(step: RunContainerUnitTestsVerifierStep) -> tuple[int, str, str]:
    from prefect_agentenv.runtime.docker import exec_in_container

    script = [f"rm -f -- {shlex.quote(step.reward_path)}"] if step.reward_path else []
    script += [f"( {c}\n)" for c in step.setup_commands] + [f"( {step.command}\n)"]
    try:
        return await exec_in_container(step.container_name, " && ".join(script), user=step.user,
                                       env=step.env_vars, timeout=step.timeout_seconds)
    except TimeoutError:
        return 124, "", f"did not finish within {step.timeout_seconds:g}s"


def _paths(step: RunContainerUnitTestsVerifierStep) -> list[str]:
    paths = list(step.result_paths)
    if step.reward_path and step.reward_path not in paths:
        paths.append(step.reward_path)
    return paths


async def _read(step: RunContainerUnitTestsVerifierStep, path: str) -> JsonValue:
    """The file parsed as JSON, else its text; None when it cannot be read."""
    from prefect_agentenv.runtime.docker import exec_in_container

    try:
        code, out, _ = await exec_in_container(step.container_name, f"cat -- {shlex.quote(path)}", user="root",
                                               env={}, timeout=30)
    except TimeoutError:
        return None
    if code != 0:
        return None
    try:
        return json.loads(out)
    except ValueError:
        return out


def _row(step: RunContainerUnitTestsVerifierStep, code: int, files: JsonObject) -> tuple[VerificationRow, bool]:
    if step.reward_path is None:
        passed = code == 0
        return VerificationRow(id="exit_code", result="pass" if passed else "fail", score=1.0 if passed else 0.0,
                               weight=1.0, justification=f"exit code {code}"), passed
    reward = _reward(files.get(step.reward_path))
    if reward is None:
        return VerificationRow(id="reward", result="fail", score=0.0, weight=1.0, justification=(
            f"reward file {step.reward_path} missing or not a number (exit code {code})")), False
    passed = reward >= 1.0
    result: RowResult = "pass" if passed else ("partial" if reward > 0 else "fail")
    return VerificationRow(id="reward", result=result, score=reward, weight=1.0,
                           justification=f"reward {reward:g} (exit code {code})"), passed


def _reward(raw: JsonValue) -> float | None:
    if not isinstance(raw, str | int | float) or isinstance(raw, bool):
        return None
    try:
        value = float(raw.strip() if isinstance(raw, str) else raw)
    except ValueError:
        return None
    return min(1.0, max(0.0, value))


definition = StepDefinition(RunContainerUnitTestsVerifierStep, run)
