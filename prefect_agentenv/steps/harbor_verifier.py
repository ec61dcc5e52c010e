"""harbor_verifier: a Harbor task's tests, run as Harbor runs them, scored from its reward file.

``/tests`` appears only now, after the agent. ``test.sh`` runs from the workdir as ``[verifier].user``
with ``[verifier].env``, its output in ``/logs/verifier/test-stdout.txt``, its exit code ignored.
``/logs/verifier/reward.json`` (numbers by name) is read first, else ``reward.txt`` (one number).
Every key is a verification row by name; the verifier's score is the ``reward`` key when there is one,
else the mean of the keys. No reward file is a failed verifier (scored 0, never a raised score).

In ``separate`` mode the tests run in a fresh container of the image built from ``tests/``, with no
network, holding only ``/logs/artifacts`` and the declared ``artifacts`` at their original paths.
"""

from __future__ import annotations

import json
import logging
import math
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from prefect_agentenv.context import RunContext, Verification
from prefect_agentenv.grading.aggregate import Aggregator, VerificationRow
from prefect_agentenv.grading.verification import errored, scored
from prefect_agentenv.runtime.resources.run import current_run
from prefect_agentenv.steps.base import VerifierStep
from prefect_agentenv.steps.harbor_environment import RunningEnvironment, running_environment
from prefect_agentenv.steps.registry import StepDefinition

if TYPE_CHECKING:
    from prefect_agentenv.documents.harbor.config import VerifierConfig
    from prefect_agentenv.documents.harbor.folder import HarborTask

logger = logging.getLogger("prefect_agentenv.harbor")

FORMAT = "harbor_reward"
STOPPED = "stopped early"
_TAIL = 2000
_RUN_TESTS = ("chmod +x /tests/test.sh 2>/dev/null; rm -f /logs/verifier/reward.json /logs/verifier/reward.txt; "
              "/tests/test.sh > /logs/verifier/test-stdout.txt 2>&1; echo \"exit $?\" >> /logs/verifier/test-stdout.txt")


class HarborVerifierStep(VerifierStep):
    """Runs a Harbor task's tests/test.sh and scores its reward file."""

    type: Literal["harbor_verifier"] = "harbor_verifier"
    task_dir: str = Field(min_length=1)
    """The Harbor task folder: its absolute path, or ``sha256:<hex>`` (kept by content in the artifact store)."""
    sandbox_name: str = "environment"
    """The harbor_environment the agent acted in."""
    step_name: str | None = None
    """The task's step (a multi-step task); None for a single-step task."""
    agent_step: str | None = None
    """The harbor_agent step graded (its prompt response says when it stopped early)."""
    tests_sha256: str | None = None
    """The tests' hash when the task was compiled (part of the setup's fingerprint)."""

    default_aggregator: ClassVar[Aggregator] = "weighted_average"
    rows_from_output: ClassVar[bool] = True
    rescore_needs_environment: ClassVar[bool] = True

    def rescore_refusal(self) -> str | None:
        """The task folder is gone or invalid, or its tests are not the ones this document was compiled with."""
        from prefect_agentenv.documents.harbor.folder import HarborTaskError, load_task_folder
        from prefect_agentenv.documents.harbor.kept_tasks import task_folder

        try:
            task = load_task_folder(task_folder(self.task_dir))
        except HarborTaskError as exc:
            return f"its Harbor task folder is not readable here: {str(exc).splitlines()[0]}"
        return tests_changed(self, task)


async def run(step: HarborVerifierStep, ctx: RunContext) -> RunContext:
    """Run the tests (shared or separate), read the reward, record the verification.

    In a run, what the tests read (the workdir, or a separate verifier's artifacts) is kept first for a
    later rescore; in a rescore, a fresh container of the task's image gets it back and the tests run there.
    """
    agent = ctx.prompt_responses.get(step.agent_step or "")
    if agent is not None and agent.error is not None and agent.error.startswith(STOPPED):
        row = VerificationRow(id="stopped_early", result="fail", score=0.0, weight=1.0, justification=agent.error)
        ctx.metadata.verifications[step.verifier_id] = scored([row], aggregator="weighted_average",
                                                              weight=step.weight, fmt=FORMAT)
        return ctx
    restored = current_run().services.restored_environments
    if restored is None:
        env = await running_environment(ctx, step.sandbox_name, step.task_dir, step)
    else:
        env = await restored_environment(step, restored.get(step.id))
    _check_tests(step, env.task)
    config = _verifier_config(env.task, step.step_name)
    folder = current_run().step_folder("harbor", step.id)
    if restored is None:
        await keep_environment(step, env, folder)
    if env.task.config.verifier.environment_mode == "separate":
        output, rewards = await _run_separate(step, env, config, folder)
    else:
        output, rewards = await _run_shared(step, env, config, folder)
    ctx.metadata.verifications[step.verifier_id] = verification(step, env, rewards, output)
    return ctx


def kept_paths(step: HarborVerifierStep, env: RunningEnvironment) -> list[str]:
    """What the tests read of the agent's environment: the workdir (shared), or ``/logs/artifacts`` and
    the declared artifacts (separate)."""
    from prefect_agentenv.runtime.harbor.kept import is_kept_path

    if env.task.config.verifier.environment_mode == "separate":
        paths = ["/logs/artifacts", *(source for source, _ in artifact_paths(env.task, step.step_name))]
    else:
        paths = [env.workdir]
    return [p for p in dict.fromkeys(paths) if is_kept_path(p)]


async def keep_environment(step: HarborVerifierStep, env: RunningEnvironment, folder: Path) -> None:
    """Keep, as the run's submission, each path the tests read, as the agent left it (an absent one is
    not kept: a rescore finds it absent too)."""
    from prefect_agentenv.runtime.harbor.environment import HarborEnvironmentError
    from prefect_agentenv.runtime.harbor.kept import archive_out

    kept: dict[str, Path] = {}
    try:
        for n, path in enumerate(kept_paths(step, env)):
            if await archive_out(env.container, path, folder / "kept" / f"{n}.tar"):
                kept[path] = folder / "kept" / f"{n}.tar"
    except HarborEnvironmentError as exc:  # a by-product of the run: it is graded all the same
        logger.warning("%s: not kept, so this run cannot be rescored: %s", step.id, exc)
        return
    current_run().services.kept_environments[step.id] = kept


async def restored_environment(step: HarborVerifierStep, kept: dict[str, bytes] | None) -> RunningEnvironment:
    """A rescore's environment: a fresh container of the task's image (built again if it is gone), its
    network and limits, with the kept paths put back; removed with the scoring run."""
    from prefect_agentenv.exceptions import DeployError, StepError
    from prefect_agentenv.runtime.harbor.environment import HarborEnvironmentError
    from prefect_agentenv.runtime.harbor.images import ImageError, ensure_image, source_of
    from prefect_agentenv.runtime.harbor.kept import archive_in
    from prefect_agentenv.steps.harbor_environment import load_task, start_container

    if kept is None:
        raise StepError("the run kept no final workdir for this verifier, so its tests cannot run again", step=step)
    task = load_task(step.task_dir, step)
    env_config = task.config.environment
    try:
        image = await ensure_image(task.slug, source_of(task.environment, env_config.docker_image),
                                   build_timeout=env_config.build_timeout_sec)
    except ImageError as exc:
        raise DeployError(f"the environment's image: {exc}", step=step) from None
    workdir = env_config.workdir or image.workdir
    container = await start_container(step, task, image, workdir)
    try:
        for path, archive in kept.items():
            await archive_in(container, path, archive)
    except HarborEnvironmentError as exc:
        raise DeployError(f"the kept environment could not be restored: {exc}", step=step) from None
    return RunningEnvironment(container, image, workdir, task)


def tests_changed(step: HarborVerifierStep, task: HarborTask) -> str | None:
    """Why the tests are not the ones the document was compiled with (their hash is part of its setup), or None."""
    from prefect_agentenv.documents.harbor.folder import sha256_folder

    if step.tests_sha256 is None:
        return None
    files = next((f for f in task.steps if not task.multi_step or f.name == step.step_name), None)
    if sha256_folder(task.root / "tests", files.tests if files else None) == step.tests_sha256:
        return None
    return (f"{task.root}/tests changed since the document was compiled from it (a rescore with --task or "
            "--benchmark naming the folder scores with the current tests)")


def _check_tests(step: HarborVerifierStep, task: HarborTask) -> None:
    from prefect_agentenv.exceptions import StepError

    changed = tests_changed(step, task)
    if changed is not None:
        raise StepError(changed, step=step)


def _verifier_config(task: HarborTask, step_name: str | None) -> VerifierConfig:
    for s in task.config.steps:
        if s.name == step_name:
            merged = task.config.verifier.model_copy(update={
                "env": {**task.config.verifier.env, **s.verifier.env},
                **{k: getattr(s.verifier, k) for k in ("timeout_sec", "user") if k in s.verifier.model_fields_set}})
            return merged
    return task.config.verifier


async def _run_shared(step: HarborVerifierStep, env: RunningEnvironment, config: VerifierConfig,
                      folder: Path) -> tuple[str, dict[str, float] | str]:
    """The tests uploaded into the agent's environment and run there."""
    from prefect_agentenv.runtime.harbor.environment import copy_in, exec_in

    for tests in tests_folders(env.task, step.step_name):
        await copy_in(env.container, tests, "/tests")
    done = await exec_in(env.container, _RUN_TESTS, user=None if config.user is None else str(config.user),
                         timeout=config.timeout_sec, env=verifier_env(config), workdir=env.workdir)
    return await read_reward(env.container, folder, done.timed_out, config.timeout_sec)


async def _run_separate(step: HarborVerifierStep, env: RunningEnvironment, config: VerifierConfig,
                        folder: Path) -> tuple[str, dict[str, float] | str]:
    """The tests in a fresh container of the image built from tests/, with no network, holding only
    /logs/artifacts and the declared artifacts (copied out of the agent's environment, then in)."""
    from prefect_agentenv.exceptions import DeployError
    from prefect_agentenv.runtime.harbor.environment import (
        HarborEnvironmentError,
        exec_in,
        remove_environment,
        start_environment,
        transfer,
    )
    from prefect_agentenv.runtime.harbor.images import BuildSource, ImageError, ensure_image

    task = env.task
    try:
        image = await ensure_image(f"{task.slug}-verifier", BuildSource(task.root / "tests", task.root / "tests" / "Dockerfile"),
                                   build_timeout=(config.environment or task.config.environment).build_timeout_sec)
    except ImageError as exc:
        raise DeployError(f"the separate verifier's image: {exc}", step=step) from None
    try:
        container = await start_environment(image.tag, workdir=image.workdir, env={}, network="none",
                                            run_id=current_run().run_id, prefix="harbor-verifier")
    except HarborEnvironmentError as exc:
        raise DeployError(f"the separate verifier did not start: {exc}", step=step) from None
    try:
        for source, destination in [("/logs/artifacts", "/logs/artifacts"), *artifact_paths(task, step.step_name)]:
            await transfer(env.container, source, container, destination, folder / "artifacts")
        done = await exec_in(container, _RUN_TESTS, user=None if config.user is None else str(config.user),
                             timeout=config.timeout_sec, env=verifier_env(config), workdir=image.workdir)
        return await read_reward(container, folder, done.timed_out, config.timeout_sec)
    finally:
        await remove_environment(container)


def artifact_paths(task: HarborTask, step_name: str | None) -> list[tuple[str, str]]:
    """(path in the agent's environment, path in the verifier's) of each declared artifact."""
    declared = list(task.config.artifacts)
    for s in task.config.steps:
        if s.name == step_name:
            declared += s.artifacts
    out = []
    for item in declared:
        if isinstance(item, str):
            out.append((item, item))
        else:
            out.append((item.source, item.destination or item.source))
    return out


def tests_folders(task: HarborTask, step_name: str | None) -> list[Path]:
    """The root tests/ then the step's tests/ (same-named files of the step win)."""
    folders = [task.root / "tests"] if (task.root / "tests").is_dir() else []
    for files in task.steps:
        if step_name is not None and files.name == step_name and files.tests is not None:
            folders.append(files.tests)
    return folders


def verifier_env(config: VerifierConfig) -> dict[str, str]:
    from prefect_agentenv.documents.loading import resolve_env_vars

    try:
        filled: dict[str, str] = resolve_env_vars(dict(config.env))
    except KeyError as exc:
        from prefect_agentenv.exceptions import StepError

        raise StepError(f"[verifier].env names ${{{exc.args[0]}}}, which is not set here") from None
    return filled


async def read_reward(container: str, folder: Path, timed_out: bool,
                      timeout: float) -> tuple[str, dict[str, float] | str]:
    """(test output, the rewards by name) or (test output, why there are none); /logs/verifier kept in ``folder``."""
    from prefect_agentenv.runtime.harbor.environment import copy_out

    shutil.rmtree(folder / "verifier", ignore_errors=True)
    await copy_out(container, "/logs/verifier", folder / "verifier")
    logs = folder / "verifier"
    output = _text(logs / "test-stdout.txt") or ""
    if timed_out:
        return output, f"test.sh did not finish within [verifier].timeout_sec={timeout:g}s"
    return output, parse_reward(_text(logs / "reward.json"), _text(logs / "reward.txt"))


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def parse_reward(reward_json: str | None, reward_txt: str | None) -> dict[str, float] | str:
    """The rewards by name, reward.json first; else why there are none (missing, empty, not numbers)."""
    if reward_json is not None:
        if not reward_json.strip():
            return "reward.json is empty"
        try:
            data = json.loads(reward_json)
        except ValueError as exc:
            return f"reward.json is not JSON: {exc}"
        if not isinstance(data, dict) or not data:
            return "reward.json is not an object of numbers by name"
        bad = [k for k, v in data.items() if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v)]
        if bad:
            return f"reward.json: {', '.join(bad)} is not a number"
        return {str(k): float(v) for k, v in data.items()}
    if reward_txt is None:
        return "no reward file: test.sh wrote neither /logs/verifier/reward.json nor reward.txt"
    try:
        return {"reward": float(reward_txt.strip())}
    except ValueError:
        return f"reward.txt is {'empty' if not reward_txt.strip() else 'not a number'}"


def verification(step: HarborVerifierStep, env: RunningEnvironment, rewards: dict[str, float] | str,
                 output: str) -> Verification:
    """One row per reward key; the score is ``reward`` when present (the others weight 0), else their mean."""
    extra: dict[str, Any] = {"image": env.image.tag, "image_id": env.image.image_id,
                             "task_toml_sha256": env.task.task_toml_sha256, "test_stdout_tail": output[-_TAIL:]}
    if isinstance(rewards, str):
        return errored(rewards, weight=step.weight, fmt=FORMAT, axes=None, **extra)
    rows = [VerificationRow.model_validate({
        "id": key, "result": _result(value), "score": min(1.0, max(0.0, value)),
        "weight": 1.0 if "reward" not in rewards or key == "reward" else 0.0,
        "justification": f"{key} = {value:g}", "value": value}) for key, value in rewards.items()]
    return scored(rows, aggregator="weighted_average", weight=step.weight, fmt=FORMAT, rewards=rewards, **extra)


def _result(value: float) -> Literal["pass", "fail", "partial"]:
    return "pass" if value >= 1.0 else ("fail" if value <= 0.0 else "partial")


def stopped_early(ctx: RunContext, task: HarborTask, after_verifier: str | None) -> str | None:
    """Why the step after ``after_verifier`` does not run (its step's min_reward not reached), or None."""
    if after_verifier is None:
        return None
    before = ctx.metadata.verifications.get(after_verifier)
    name = after_verifier.removeprefix("verifier-")
    threshold = next((s.min_reward for s in task.config.steps if s.name == name), None)
    if before is None or threshold is None:
        return None
    rewards = before.model_extra.get("rewards") if before.model_extra else None
    if before.score is None or (isinstance(rewards, dict) is False and isinstance(threshold, dict)):
        return f"{STOPPED}: step '{name}' has no reward to compare with its min_reward"
    if isinstance(threshold, dict):
        under = [k for k, t in threshold.items() if float((rewards or {}).get(k, 0.0)) < t]
        return f"{STOPPED}: step '{name}' is under its min_reward on {', '.join(under)}" if under else None
    return f"{STOPPED}: step '{name}' scored {before.score:g}, under its min_reward {threshold:g}" \
        if before.score < threshold else None


definition = StepDefinition(HarborVerifierStep, run)
