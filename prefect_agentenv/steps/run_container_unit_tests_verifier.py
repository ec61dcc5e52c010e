"""run_container_unit_tests_verifier: run a test command in a docker container and score its exit or reward file."""

from __future__ import annotations

import asyncio
import json
import shlex
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field, model_validator

from prefect_agentenv.context import RunContext
from prefect_agentenv.exceptions import AgentEnvError, StepError
from prefect_agentenv.grading.aggregate import RowResult, VerificationRow
from prefect_agentenv.grading.verification import scored
from prefect_agentenv.jsontypes import JsonObject, JsonValue
from prefect_agentenv.run_services.clients import artifact_store, as_step_error
from prefect_agentenv.run_services.sandboxes import sandbox_target
from prefect_agentenv.runtime.resources.run import current_run
from prefect_agentenv.steps.base import AgentRef, SandboxPath, VerifierStep
from prefect_agentenv.steps.registry import StepDefinition

if TYPE_CHECKING:
    from prefect_agentenv.runtime.confinement.fresh_container import FreshRun, Mount
    from prefect_agentenv.runtime.confinement.grading_box import GradingBox, GradingRecord

_TAIL = 2000


class RunContainerUnitTestsVerifierStep(VerifierStep):
    """Runs setup_commands then command in a running container, or in a fresh container of an image that
    holds a copy of an agent's sandbox (the local docker daemon's).

    Scored by the exit code (0 passes), or, with reward_path, by the number in that file (0.0–1.0;
    1.0 passes), as Harbor-style test scripts write it.
    """

    type: Literal["run_container_unit_tests_verifier"] = "run_container_unit_tests_verifier"
    container_name: str | None = Field(default=None, min_length=1)
    """Name or id of a running container, on the docker daemon this runner talks to (the tests run in it as
    it is: when it is the agent's own, what the agent left there runs too)."""
    image: str | None = Field(default=None, min_length=1)
    """Or: the tests run in a fresh container of this image, with no network, removed after: the agent's
    work reaches it only as a copy of agent_name's sandbox (docs/security.md, "Grading apart")."""
    agent_name: AgentRef | None = None
    """With image: the agent whose sandbox is copied in (its top folders at /app, /tmp, …; files that change
    what runs and that the task did not load set aside)."""
    inputs: list[SandboxPath] | None = None
    """With image: the sandbox paths copied (default: the whole sandbox but the agent's home)."""
    tests_artifact_id: str | None = Field(default=None, min_length=1)
    """With image: a file artifact of the verifier's own files (its tests), mounted read-only at tests_path;
    never in the agent's view."""
    tests_path: str = Field(default="/tests", pattern=r"^/")
    """Where tests_artifact_id's files are in the container."""
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
    artifact_field = "tests_artifact_id"

    @model_validator(mode="after")
    def _one_container(self) -> RunContainerUnitTestsVerifierStep:
        if (self.container_name is None) == (self.image is None):
            raise ValueError("give exactly one of container_name (a running container) or image (a fresh one)")
        if self.image is None:
            given = [f for f in ("agent_name", "inputs", "tests_artifact_id") if getattr(self, f) is not None]
            if given:
                raise ValueError(f"{', '.join(given)} go with image (a fresh container), not container_name")
        return self


async def run(step: RunContainerUnitTestsVerifierStep, ctx: RunContext) -> RunContext:
    """Check the daemon, run setup and tests, read result files, record the row; a failed run raises after."""
    from prefect_agentenv.runtime.launch.docker import DockerLauncher

    if not await DockerLauncher.available():
        raise StepError(f"{step.type} runs tests in a docker container, and no docker daemon answers here "
                        "(`docker info` failed): run it where docker is available", step=step)
    extra: dict[str, object] = {}
    if step.image is not None:
        done, record = await _in_fresh_container(step, ctx)
        code, out, err, files = done.exit_code, done.stdout, done.stderr, done.files
        extra["grading_sandbox"] = record.as_json()
    else:
        code, out, err = await _run_tests(step)
        files = {path: await _read(step, path) for path in _paths(step)}
    row, passed = _row(step, code, files)
    ctx.metadata.verifications[step.verifier_id] = scored(
        [row.model_dump()], aggregator=step.score_aggregator, weight=step.weight, fmt="container_tests", exit_code=code,
        stdout_tail=out[-_TAIL:], stderr_tail=err[-_TAIL:], extracted_files=files, **extra)
    if not passed and step.reward_path is None:
        where = f"container '{step.container_name}'" if step.image is None else f"a fresh container of {step.image}"
        raise StepError(f"tests in {where} exited {code}: {err.strip()[-300:]}", step=step, context=ctx)
    return ctx


def _script(step: RunContainerUnitTestsVerifierStep) -> str:
    """The stale reward file removed, then each setup command, then the tests; the first failure ends it."""
    script = [f"rm -f -- {shlex.quote(step.reward_path)}"] if step.reward_path else []
    script += [f"( {c}\n)" for c in step.setup_commands] + [f"( {step.command}\n)"]
    return " && ".join(script)


async def _run_tests(step: RunContainerUnitTestsVerifierStep) -> tuple[int, str, str]:
    from prefect_agentenv.runtime.launch.docker import exec_in_container

    try:
        return await exec_in_container(step.container_name or "", _script(step), user=step.user,
                                       env=step.env_vars, timeout=step.timeout_seconds)
    except TimeoutError:
        return 124, "", f"did not finish within {step.timeout_seconds:g}s"


async def _in_fresh_container(step: RunContainerUnitTestsVerifierStep,
                              ctx: RunContext) -> tuple[FreshRun, GradingRecord]:
    """The tests in a new container of the image: the agent's sandbox as a copy, the verifier's files read-only,
    no network; the copy and the container gone after (the copy kept with --keep). With what ran them."""
    from prefect_agentenv.runtime.confinement.fresh_container import FreshContainerError, run_in_fresh_container
    from prefect_agentenv.runtime.confinement.grading_box import GradingRecord
    from prefect_agentenv.runtime.launch.docker import server_version

    run_ = current_run()
    folder = run_.step_folder("grading", step.id)
    box = await _box(step, ctx)
    try:
        mounts = [*_box_mounts(box), *await _tests_mount(step, folder)]
        done = await run_in_fresh_container(step.image or "", _script(step), mounts=mounts,
                                            workdir="/app" if box else "/", user=step.user, env=step.env_vars,
                                            timeout=step.timeout_seconds, run_id=run_.run_id, read=_paths(step))
    except FreshContainerError as exc:
        raise StepError(f"a fresh container of {step.image} could not be made: {exc}", step=step) from None
    finally:
        if not run_.keep:
            if box is not None:
                box.remove()
            shutil.rmtree(folder / "tests", ignore_errors=True)
    copied = box.record() if box is not None else GradingRecord(mechanism="", network="none")
    return done, copied.in_container(step.image or "", f"docker {await server_version() or 'unknown'}")


async def _box(step: RunContainerUnitTestsVerifierStep, ctx: RunContext) -> GradingBox | None:
    from prefect_agentenv.runtime.confinement.grading_box import open_box

    if step.agent_name is None:
        return None
    sandbox, _, _ = sandbox_target(ctx, step, agent_name=step.agent_name, sandbox_name=None)
    try:
        return await asyncio.to_thread(open_box, sandbox, current_run().step_folder("grading", step.id),
                                       inputs=step.inputs)
    except AgentEnvError as exc:
        raise StepError(f"inputs: {exc}", step=step) from None


def _box_mounts(box: GradingBox | None) -> list[Mount]:
    """The copy's top folders where the agent saw them (``/app``, ``/tmp``, …)."""
    from prefect_agentenv.runtime.confinement.confined import sandbox_mounts
    from prefect_agentenv.runtime.confinement.fresh_container import Mount

    return [Mount(host, inside) for host, inside in sandbox_mounts(box.root)[1:]] if box else []


async def _tests_mount(step: RunContainerUnitTestsVerifierStep, folder: Path) -> list[Mount]:
    """The verifier's files, fetched from the artifact store into the run's folder, mounted read-only."""
    from prefect_agentenv.runtime.confinement.fresh_container import Mount

    if step.tests_artifact_id is None:
        return []
    target = folder / "tests"
    shutil.rmtree(target, ignore_errors=True)
    store = await artifact_store(current_run())
    try:
        meta = await asyncio.to_thread(store.get_metadata, step.tests_artifact_id, step.version or "latest")
        await asyncio.to_thread(store.download, meta, target)
    except AgentEnvError as exc:
        raise as_step_error(exc, step, f"fetching tests artifact '{step.tests_artifact_id}'") from exc
    return [Mount(target, step.tests_path, read_only=True)]


def _paths(step: RunContainerUnitTestsVerifierStep) -> list[str]:
    paths = list(step.result_paths)
    if step.reward_path and step.reward_path not in paths:
        paths.append(step.reward_path)
    return paths


async def _read(step: RunContainerUnitTestsVerifierStep, path: str) -> JsonValue:
    """The file parsed as JSON, else its text; None when it cannot be read."""
    from prefect_agentenv.runtime.launch.docker import exec_in_container

    try:
        code, out, _ = await exec_in_container(step.container_name or "", f"cat -- {shlex.quote(path)}", user="root",
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
