"""Scoring a finished rollout with the task's verifier steps, where the scoring config says.

``shared`` runs the verifiers against the agent's own envs and sandbox. ``isolated`` first takes
the submission — each env's exported state, the sandbox's files and the agent's replies — and
restores it into fresh env instances and a fresh sandbox in a scoring run of its own; that run
is torn down after scoring, and rebuilt from the same submission when an attempt fails (up to
``retries.max_retries`` more times). The verifier steps are the ones a task document runs.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ValidationError

from prefect_agentenv.api.config import ScoringConfig, TaskData
from prefect_agentenv.context import PromptResponse, RunContext, Verification
from prefect_agentenv.documents.loading import resolve_env_vars
from prefect_agentenv.documents.validation import resolved_value_errors
from prefect_agentenv.exceptions import AgentEnvError, ConfigurationError
from prefect_agentenv.flows.engine import scoring_placement as placement
from prefect_agentenv.flows.reports.report import redact
from prefect_agentenv.grading.outcome import task_score
from prefect_agentenv.grading.verification import read_all
from prefect_agentenv.runtime.run import RunResources, bind_run, unbind_run
from prefect_agentenv.settings import get_settings
from prefect_agentenv.steps.base import StepModel
from prefect_agentenv.steps.registry import get_step

logger = logging.getLogger("prefect_agentenv.api")

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

    @property
    def rewards(self) -> dict[str, float | None]:
        return {vid: v.score for vid, v in self.verifications.items()}


def verifier_steps(task: TaskData, agent_name: str, scoring_env: dict[str, str] | None = None) -> list[StepModel]:
    """The task's verifier steps, with the fields a rollout implies filled in: ``prompt_id``, the
    graded agent's name (not for a rubric, whose ``agent_name`` names a judge, nor for a step
    given a ``sandbox_name``), the env when there is one, and ids.

    Raises:
        ConfigurationError: a verifier is not a valid step (its index and the problem are named).
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
            steps.append(model.model_validate(data))
        except ValidationError as exc:
            raise ConfigurationError(f"verifiers[{i}] ({data['type']} '{data['id']}'): " + "; ".join(
                f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())) from None
    return steps


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
    """Run the verifiers where the config says; the reward follows the skip policy."""
    env = scoring_env(scoring, session_run.redact)
    steps = verifier_steps(task, agent_name, env)
    info = ScoringInfo(mode=scoring.mode, env=sorted(scoring.env),
                       network=scoring.network.mode if scoring.network else None)
    if scoring.mode == "shared":
        shared = ctx.model_copy(deep=True)
        shared.prompt_responses[PROMPT_ID] = submission.response
        verifications, _ = await _run_verifiers(steps, shared, session_run.redact)
        info.attempts = 1
    else:
        verifications, info.attempts = await _isolated(session_run, ctx, scoring, submission, steps, agent_name)
    return Scored(info, verifications, task_score(verifications, scoring.skip_policy))


async def _run_verifiers(steps: list[StepModel], ctx: RunContext,
                         redact: set[str]) -> tuple[dict[str, Verification], list[str]]:
    """Every verifier in order (``${VAR}``s resolved as a flow run does); one that errs scores 0
    with its error, and the error is returned so isolated scoring can try again."""
    errors: list[str] = []
    for step in steps:
        definition = get_step(step.type)
        assert definition.run is not None
        try:
            resolved = type(step).model_validate(resolve_env_vars(step.model_dump(by_alias=True), used=redact))
        except KeyError as exc:
            raise ConfigurationError(f"verifier '{step.id}': environment variable {exc.args[0]} is not set") from None
        except ValidationError as exc:
            raise ConfigurationError(f"verifier '{step.id}' with its ${{VAR}}s resolved: "
                                     f"{resolved_value_errors(exc)}") from None
        try:
            ctx = await definition.run(resolved, ctx)
        except AgentEnvError as exc:
            errors.append(f"{step.id}: {exc}")
            verifier_id = getattr(step, "verifier_id", step.id)
            ctx.metadata.verifications[verifier_id] = Verification.written(
                score=0.0, results=[], error=str(exc), weight=getattr(step, "weight", 1.0))
    verifications = read_all(ctx.metadata.verifications)
    errors += [f"{vid}: {v.error}" for vid, v in verifications.items()
               if v.error and not any(e.startswith(f"{vid}: ") for e in errors)]
    return verifications, errors


async def _isolated(session_run: RunResources, ctx: RunContext, scoring: ScoringConfig, submission: Submission,
                    steps: list[StepModel], agent_name: str) -> tuple[dict[str, Verification], int]:
    """Restore the submission into a fresh scoring run and score it; rebuild and retry on failure."""
    attempts = 1 + scoring.retries.max_retries
    verifications: dict[str, Verification] = {}
    graded = _graded(ctx, agent_name)
    graded.prompt_responses = {PROMPT_ID: submission.response}
    assert submission.placed is not None
    for attempt in range(1, attempts + 1):
        run = placement.scoring_run(session_run, attempt)
        token = bind_run(run)
        try:
            fresh = await placement.restore(run, graded, scoring, submission.placed)
            verifications, errors = await _run_verifiers(steps, fresh, run.redact)
        except AgentEnvError as exc:
            errors = [f"restoring the submission: {exc}"]
        finally:
            await run.teardown.stop_all(get_settings().teardown_timeout_seconds)
            unbind_run(token)
        if not errors:
            return verifications, attempt
        logger.warning("isolated scoring attempt %d of %d failed: %s", attempt, attempts,
                       redact("; ".join(errors), run.redact))
    return verifications, attempts
