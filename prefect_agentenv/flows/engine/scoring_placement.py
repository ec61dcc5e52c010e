"""Isolated scoring: the submission restored into fresh envs and sandboxes, scored there, retried.

When a task's ``scoring.mode`` is ``isolated`` the verifiers do not run against the agent's own
envs and sandboxes. Once the rollout is over, the submission is captured once — each env's
exported state (``data/get``) and each agent's sandbox files — and every scoring attempt runs in
a scoring run of its own: each env is deployed afresh (``scoring.runtime`` over its deploy
fields) and loaded with the captured state (``data/reset``, ``data/add``), each agent gets a
fresh sandbox holding its files, the verifiers run there, and the scoring run is torn down. An
attempt that fails (restoring failed, or a verifier erred) is tried again with the **same**
submission, up to ``scoring.retries.max_retries`` more times.

Used by the ``agent_task`` flow (:func:`run_isolated`) and by the Python agent API.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from prefect_agentenv.context import DeployedAgent, RunContext
from prefect_agentenv.documents.models import TaskDocument
from prefect_agentenv.documents.scoring import ScoringConfig, runtime_step
from prefect_agentenv.exceptions import AgentEnvError, ConfigurationError
from prefect_agentenv.grading.verification import read_all
from prefect_agentenv.flows.reports.report import redact
from prefect_agentenv.flows.engine.scheduler import DagScheduler, Execute, ScheduleResult
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.protocols.env import DataPart
from prefect_agentenv.runtime.run import RunResources, bind_run, unbind_run
from prefect_agentenv.runtime.sandbox import create_sandbox
from prefect_agentenv.runtime.teardown import TeardownRegistry
from prefect_agentenv.settings import get_settings
from prefect_agentenv.steps import deploy_env
from prefect_agentenv.steps.support.agents import sandbox_of
from prefect_agentenv.steps.base import StepModel
from prefect_agentenv.steps.support.services import env_client

logger = logging.getLogger("prefect_agentenv.scoring")



@dataclass
class Submission:
    """What the agents left, captured once so every scoring attempt grades the same thing."""

    states: dict[str, JsonObject] = field(default_factory=dict)
    """Each env's exported state (its JSON, as ``data/get`` gave it), by env id."""
    files: dict[str, dict[str, bytes]] = field(default_factory=dict)
    """Each agent's sandbox files, by agent name and sandbox path."""


async def capture(run: RunResources, ctx: RunContext) -> Submission:
    """The envs' states and the agents' sandbox files, as the rollout left them."""
    submission = Submission()
    probe = deploy_env.DeployEnvStep(id="capture", env_id="capture")
    for env_id in ctx.deployed_envs:
        submission.states[env_id] = await env_client(ctx, env_id, probe).export_state()
    for name, agent in ctx.deployed_agents.items():
        if agent.sandbox:
            sandbox = sandbox_of(run, agent)
            submission.files[name] = {p: sandbox.read(p) for p in sandbox.list_files(".")}
    return submission


def scoring_run(parent: RunResources, attempt: int) -> RunResources:
    """A run of its own for one scoring attempt: its own teardown and folder, the parent's
    options, and the parent's redaction set (what scoring resolves stays out of the report)."""
    settings = get_settings()
    run = RunResources(run_id=f"{parent.run_id}-scoring-{attempt}", task_id=parent.task_id,
                       workdir=parent.workdir / f"scoring-{attempt}", keep=parent.keep,
                       overrides=parent.overrides, redact=parent.redact,
                       teardown=TeardownRegistry(per_entry_timeout=settings.step_teardown_timeout_seconds))
    # Shared with the run it scores: the mock model and the deploy_sandbox env vars; the clients
    # it makes and tears down itself. (The step graph Prefect draws is the flow's, shared as it is.)
    run.services.mock_model_url = parent.services.mock_model_url
    run.services.sandbox_env = parent.services.sandbox_env
    run.services.sandboxes = dict(parent.services.sandboxes)  # deploy_sandbox ones, scored in place
    run.workdir.mkdir(parents=True, exist_ok=True)
    return run


async def restore(run: RunResources, ctx: RunContext, scoring: ScoringConfig, submission: Submission) -> RunContext:
    """``ctx`` with fresh envs loaded with the captured states and fresh sandboxes with the files
    (everything else — replies, collected artifacts, verifications so far — carried over)."""
    fresh = ctx.model_copy(deep=True)
    fresh.deployed_envs = {}
    for env_id, deployed in ctx.deployed_envs.items():
        try:
            step = runtime_step(env_id, deployed.version, scoring)
        except ValueError as exc:
            raise ConfigurationError(f"scoring.runtime: {exc}") from None
        fresh = await deploy_env.run(step, fresh)  # type: ignore[arg-type]
        client = env_client(fresh, env_id, step)
        await client.data_reset()
        await client.data_add([DataPart(data=submission.states.get(env_id, {}))])
    for name, agent in ctx.deployed_agents.items():
        if agent.sandbox:
            fresh.deployed_agents[name] = restored_agent(run, agent, submission.files.get(name, {}))
    return fresh


def restored_agent(run: RunResources, agent: DeployedAgent, files: dict[str, bytes]) -> DeployedAgent:
    """The agent as the verifiers see it: its replies, and a fresh sandbox holding its files."""
    sandbox = create_sandbox(run.workdir, agent.agent_name)
    if files:
        sandbox.copy_in(files, ".")
    instance_id = f"{agent.instance_id}-{run.run_id.rsplit('-', 1)[-1]}-scoring"
    run.services.sandboxes[instance_id] = sandbox
    return agent.model_copy(update={"instance_id": instance_id, "sandbox": str(sandbox.root)})


# -- the agent_task flow -------------------------------------------------------------------------


@dataclass
class IsolatedScoring:
    """One task's isolated scoring: the verifier document, how to run a step, and the attempts."""

    document: TaskDocument
    """The verifier steps (see :func:`~prefect_agentenv.documents.scoring.split_for_isolation`)."""
    scoring: ScoringConfig
    execute: Execute
    attempts: int = 0
    _current: DagScheduler | None = None
    _stopped: str | None = None

    def stop(self, reason: str) -> None:
        """Stop the attempt in flight (the run was stopped); no further attempt starts."""
        self._stopped = reason
        if self._current is not None:
            self._current.stop(reason)

    async def run(self, parent: RunResources, rollout: ScheduleResult) -> ScheduleResult:
        """Capture the rollout's submission, score it in fresh scoring runs; the rollout's result
        with the verifiers' records and verifications of the last attempt."""
        if not self.document.steps:
            return rollout
        try:
            submission = await capture(parent, rollout.context)
        except (AgentEnvError, OSError) as exc:  # the run still ends with a report saying why
            failed = _unrestored(DagScheduler(self.document, self.execute), rollout.context,
                                 f"capturing the submission failed: {exc}")
            return _combined(rollout, failed, 0)
        last = self.scoring.retries.max_retries + 1
        result: ScheduleResult | None = None
        for attempt in range(1, last + 1):
            if self._stopped and result is not None:
                break
            self.attempts = attempt
            result, error = await self._attempt(parent, rollout.context, submission, attempt)
            if error is None:
                break
            logger.warning("isolated scoring attempt %d of %d failed: %s", attempt, last,
                           redact(error, parent.redact))
        assert result is not None
        return _combined(rollout, result, self.attempts)

    async def _attempt(self, parent: RunResources, ctx: RunContext, submission: Submission,
                       attempt: int) -> tuple[ScheduleResult, str | None]:
        run = scoring_run(parent, attempt)
        token = bind_run(run)
        try:
            try:
                fresh = await restore(run, ctx, self.scoring, submission)
            except (AgentEnvError, OSError) as exc:
                failed = _unrestored(DagScheduler(self.document, self.execute), ctx,
                                     f"restoring the submission failed: {exc}")
                return failed, str(exc)
            scheduler = self._current = DagScheduler(self.document, _on(fresh, self.execute))
            if self._stopped:
                scheduler.stop(self._stopped)
            result = await scheduler.run()
        finally:
            await run.teardown.stop_all(get_settings().teardown_timeout_seconds)
            unbind_run(token)
            if run.services.without_prefect and not parent.services.without_prefect:
                parent.services.without_prefect = run.services.without_prefect  # the report must say so
        return result, _attempt_error(result)


def _on(fresh: RunContext, execute: Execute) -> Execute:
    """``execute`` with the restored context as the input of the verifiers that wait for none."""
    async def on_fresh(step: StepModel, inputs: list[RunContext]) -> RunContext:
        return await execute(step, inputs or [fresh])

    return on_fresh


def _attempt_error(result: ScheduleResult) -> str | None:
    """Why an attempt counts as failed: a verifier failed or erred (None when it scored)."""
    if result.stopped:
        return None  # stopped from outside: no retry
    if result.fatal is not None:
        return f"step '{result.fatal.id}' failed: {result.fatal.error}"
    errors = [f"{vid}: {v.error}" for vid, v in read_all(result.context.metadata.verifications).items()
              if v.errored or v.error]
    return "; ".join(errors) or None


def _unrestored(scheduler: DagScheduler, ctx: RunContext, error: str) -> ScheduleResult:
    """An attempt whose submission could not be restored: every verifier failed with the reason."""
    result = scheduler.result()
    for record in result.records.values():
        record.state, record.error, record.error_type = "failed", error, "ScoringRestoreError"
    first = next(iter(result.records.values()))
    return ScheduleResult(ctx, result.records, first, [], None)


def _combined(rollout: ScheduleResult, scored: ScheduleResult, attempts: int) -> ScheduleResult:
    """The rollout's context (the agent's envs) with the scoring's verifications and failures."""
    context = rollout.context.model_copy(deep=True)
    context.metadata.verifications.update(scored.context.metadata.verifications)
    context.metadata.failed_steps += [f for f in scored.context.metadata.failed_steps
                                      if f not in context.metadata.failed_steps]
    for record in scored.records.values():
        record.attempts = max(record.attempts, attempts) if record.attempts else 0
    return ScheduleResult(context, {**rollout.records, **scored.records}, scored.fatal,
                          rollout.order + scored.order, scored.stopped)
