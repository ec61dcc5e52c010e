"""Scoring a finished rollout with the task's verifier steps, where the scoring config says.

``shared`` runs the verifiers against the agent's own envs and sandbox. ``isolated`` first takes
the submission — each env's exported state, the sandbox's files and the agent's replies — and
restores it into fresh env instances and a fresh sandbox in a scoring run of its own; that run
is torn down after scoring, and rebuilt from the same submission when an attempt fails (up to
``retries.max_retries`` more times). The verifier steps are the ones a task document runs, and
they run the way a flow run runs them: through the engine's DAG scheduler and ``execute_step``
(placeholders, retries, an errored verifier's record), isolated attempts through the flow's
:class:`~prefect_agentenv.engine.scoring_placement.IsolatedScoring`. A rollout's verifier
is tolerated by default (``fail_task_on_error: false``): one that errs scores 0 with its error,
and the other verifiers still run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ValidationError

from prefect_agentenv.api.config import ScoringConfig, TaskData
from prefect_agentenv.context import PromptResponse, RunContext, Verification
from prefect_agentenv.documents.loading import resolve_env_vars
from prefect_agentenv.engine import scoring_placement as placement
from prefect_agentenv.engine.execute import run_body, unset_env_vars
from prefect_agentenv.engine.scheduler import DagScheduler
from prefect_agentenv.exceptions import ConfigurationError
from prefect_agentenv.grading.outcome import task_score
from prefect_agentenv.grading.verification import read_all
from prefect_agentenv.runtime.resources.run import RunResources
from prefect_agentenv.steps.base import StepModel
from prefect_agentenv.steps.registry import get_step

PROMPT_ID = "prompt"
"""The prompt id the rollout's replies are stored under, for the verifiers that read them."""
NAMES_A_JUDGE = frozenset({"rubrics_verifier"})
"""Verifier types whose ``agent_name`` is the agent that judges, not the graded one."""


@dataclass
class Submission:
    """What the agent produced, captured once so every scoring attempt grades the same thing."""

    response: PromptResponse
    placed: placement.Submission | None = None
    """The envs' states and the sandboxes' files (isolated scoring only)."""


class ScoringInfo(BaseModel):
    """Where and how a rollout was scored: the trace's ``info["scoring"]`` (written with the
    fields that were set, in this order)."""

    mode: Literal["shared", "isolated"]
    env: list[str] = []
    """The names of the scoring env variables (never their values)."""
    network: str | None = None
    """The network policy of the scoring processes, when the config sets one."""
    attempts: int | None = None
    """How many scoring attempts ran (isolated scoring retries a failed one)."""


@dataclass
class Scored:
    info: ScoringInfo
    verifications: dict[str, Verification] = field(default_factory=dict)
    reward: float | None = None
    error: str | None = None
    """Why scoring failed (a verifier with ``fail_task_on_error: true`` failed, or the submission
    could not be restored): the reward is then 0, as a failed flow run scores."""

    @property
    def rewards(self) -> dict[str, float | None]:
        return {vid: v.score for vid, v in self.verifications.items()}


def verifier_steps(task: TaskData, agent_name: str, scoring_env: dict[str, str] | None = None) -> list[StepModel]:
    """The task's verifier steps, with the fields a rollout implies filled in: ``prompt_id``, the
    graded agent's name (not for a rubric, whose ``agent_name`` names a judge, nor for a step
    given a ``sandbox_name``), the env when there is one, ids, and ``fail_task_on_error: false``
    (a verifier that errs scores 0 and the others still run).

    Raises:
        ConfigurationError: a verifier is not a valid step, or it shares its id with an earlier
            one or depends on a step that is not an earlier verifier (its index and the problem
            are named).
    """
    steps: list[StepModel] = []
    env_ids = list(task.envs)
    for i, raw in enumerate(task.verifiers):
        data = dict(raw)
        try:
            model = get_step(str(data.get("type"))).model
        except ConfigurationError as exc:
            raise ConfigurationError(f"verifiers[{i}]: {exc}") from None
        fields = model.model_fields
        data.setdefault("verifier_id", data.get("id") or f"{data['type']}-{i + 1}")
        data.setdefault("id", data["verifier_id"])
        data.setdefault("fail_task_on_error", False)
        if "prompt_id" in fields:
            data.setdefault("prompt_id", PROMPT_ID)
        if "agent_name" in fields and data["type"] not in NAMES_A_JUDGE and not data.get("sandbox_name"):
            data.setdefault("agent_name", agent_name)
        if "env_id" in fields and len(env_ids) == 1:
            data.setdefault("env_id", env_ids[0])
        if scoring_env is not None and "scoring_env" in fields:
            own = data.get("scoring_env")
            if own is None or isinstance(own, dict):  # anything else is left for validation to name
                data["scoring_env"] = {**scoring_env, **(own or {})}
        try:
            step = model.model_validate(data)
        except ValidationError as exc:
            raise ConfigurationError(f"verifiers[{i}] ({data['type']} '{data['id']}'): " + "; ".join(
                f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())) from None
        _check_wiring(i, step, steps)
        steps.append(step)
    return steps


def _check_wiring(index: int, step: StepModel, earlier: list[StepModel]) -> None:
    """The verifiers run as a DAG: ids unique, and ``depends_on`` naming earlier verifiers only."""
    ids = {s.id for s in earlier}
    if step.id in ids:
        raise ConfigurationError(f"verifiers[{index}] ({step.type} '{step.id}'): id '{step.id}' is used by an "
                                 "earlier verifier: give each its own id (or verifier_id)")
    unknown = [d for d in step.dependency_ids() or [] if d not in ids]
    if unknown:
        raise ConfigurationError(f"verifiers[{index}] ({step.type} '{step.id}'): depends_on names "
                                 f"{', '.join(repr(d) for d in unknown)}, not an earlier verifier of the task")


def skip_reason(scoring: ScoringConfig, *, is_truncated: bool, is_timeout: bool) -> str | None:
    """``truncated`` or ``timeout`` when the config skips scoring of such a run."""
    if scoring.skip_on_truncated and is_truncated:
        return "truncated"
    if scoring.skip_on_timeout and is_timeout:
        return "timeout"
    return None


def scoring_env(scoring: ScoringConfig, redact: set[str]) -> dict[str, str]:
    """The scoring env, its templates resolved now, plus the network policy's variables.

    Raises:
        ConfigurationError: a ``${VAR}`` without a default names an unset variable.
    """
    try:
        resolved = resolve_env_vars(dict(scoring.env), used=redact)
    except KeyError as exc:
        raise ConfigurationError(f"scoring.env: environment variable {exc.args[0]} is not set "
                                 f"(write ${{{exc.args[0]}:-default}} to give a default)") from None
    return {**(scoring.network.env() if scoring.network else {}), **resolved}


async def capture(session_run: RunResources, ctx: RunContext, agent_name: str, response: PromptResponse,
                  scoring: ScoringConfig) -> Submission:
    """The submission; for isolated scoring, the envs' states and the sandbox's files too."""
    if scoring.mode != "isolated":
        return Submission(response)
    return Submission(response, await placement.capture(session_run, _graded(ctx, agent_name)))


def _graded(ctx: RunContext, agent_name: str) -> RunContext:
    """The session's context with only the graded agent (whose sandbox is the submission)."""
    agents = {n: a for n, a in ctx.deployed_agents.items() if n == agent_name}
    return ctx.model_copy(update={"deployed_agents": agents})


async def score(session_run: RunResources, ctx: RunContext, task: TaskData, scoring: ScoringConfig,
                submission: Submission, agent_name: str) -> Scored:
    """Run the verifiers where the config says; the reward follows the skip policy (0 when scoring failed).

    Raises:
        ConfigurationError: a verifier's ``${VAR}`` without a default is not set (nothing was
            deployed for scoring), or a scoring env template cannot be resolved.
    """
    env = scoring_env(scoring, session_run.redact)
    steps = verifier_steps(task, agent_name, env)
    unset = unset_env_vars(steps)
    if unset:
        raise ConfigurationError(unset)
    info = ScoringInfo(mode=scoring.mode, env=sorted(scoring.env),
                       network=scoring.network.mode if scoring.network else None)
    if scoring.mode == "shared":
        shared = ctx.model_copy(deep=True)
        shared.prompt_responses[PROMPT_ID] = submission.response
        result = await DagScheduler(steps, run_body, initial=shared).run()
        info.attempts = 1
    else:
        graded = _graded(ctx, agent_name)
        graded.prompt_responses = {PROMPT_ID: submission.response}
        assert submission.placed is not None
        isolated = placement.IsolatedScoring(steps, scoring, run_body)
        result = await isolated.score(session_run, graded, submission.placed)
        info.attempts = isolated.attempts
    verifications = read_all(result.context.metadata.verifications)
    if result.fatal is not None:
        return Scored(info, verifications, 0.0, error=f"step '{result.fatal.id}' failed: {result.fatal.error}")
    return Scored(info, verifications, task_score(verifications, scoring.skip_policy))
