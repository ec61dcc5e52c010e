"""Isolated scoring: the submission restored into fresh envs and sandboxes, scored there, retried.

When a task's ``scoring.mode`` is ``isolated`` the verifiers do not run against the agent's own
envs and sandboxes. Once the rollout is over, the submission is captured once — each env's
exported state (``data/get``) and each agent's sandbox files — and every scoring attempt runs in
a scoring run of its own: each env is deployed afresh (``scoring.runtime`` over its deploy
fields) and loaded with the captured state (``data/reset``, ``data/add``), each agent gets a
fresh sandbox holding its files, the verifiers run there, and the scoring run is torn down. An
attempt that fails (restoring failed, or a verifier erred) is tried again with the **same**
submission, up to ``scoring.retries.max_retries`` more times.

Used by the ``agent_task`` flow (:meth:`IsolatedScoring.run`) and by the Python agent API
(:meth:`IsolatedScoring.score`, on the submission it captured while its session was open): both
open each scoring run with :func:`~prefect_agentenv.engine.run_scope.open_scoring_run` and
run the verifiers through the DAG scheduler, so an attempt fails, is retried and is recorded
the same way on both.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from prefect_agentenv.context import DeployedAgent, RunContext
from prefect_agentenv.documents.graph import StepGraph
from prefect_agentenv.documents.scoring import ScoringConfig, runtime_step
from prefect_agentenv.engine.execute import Runner, execute_step
from prefect_agentenv.engine.run_scope import open_scoring_run
from prefect_agentenv.engine.scheduler import DagScheduler, ScheduleResult
from prefect_agentenv.exceptions import AgentEnvError, ConfigurationError, UnsupportedOperationError
from prefect_agentenv.grading.verification import read_all
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.protocols.env import DataPart
from prefect_agentenv.redaction import redact
from prefect_agentenv.run_services.agents import sandbox_of
from prefect_agentenv.run_services.clients import env_client
from prefect_agentenv.runtime.resources.run import RunResources
from prefect_agentenv.runtime.resources.sandbox import create_sandbox
from prefect_agentenv.steps import deploy_env
from prefect_agentenv.steps.base import StepModel

logger = logging.getLogger("prefect_agentenv.scoring")



@dataclass
class Submission:
    """What the agents left, captured once so every scoring attempt grades the same thing."""

    states: dict[str, JsonObject] = field(default_factory=dict)
    """Each env's exported state (its JSON, as ``data/get`` gave it), by env id."""
    files: dict[str, dict[str, bytes]] = field(default_factory=dict)
    """Each agent's sandbox files, by agent name and sandbox path."""
    task_files: dict[str, dict[str, bytes]] = field(default_factory=dict)
    """Each agent's sandbox files that change what runs, as the task loaded them (``Sandbox.task_files``):
    grading in the restored sandbox tells the task's own from what the agent planted."""
    environments: dict[str, dict[str, bytes]] = field(default_factory=dict)
    """Container folders steps kept for a rescore (``RunServices.kept_environments``), as tar
    archives by step id then path: a Harbor verifier's workdir as the agent left it."""


async def capture(run: RunResources, ctx: RunContext, *, stateless: dict[str, str] | None = None) -> Submission:
    """The envs' states and the agents' sandbox files, as the rollout left them.

    Args:
        stateless: collects the envs without a data plane (a plain MCP server), with why, instead
            of failing: their state cannot be kept (a kept submission); none: they fail it.
    """
    submission = Submission()
    probe = deploy_env.DeployEnvStep(id="capture", env_id="capture")
    for env_id in ctx.deployed_envs:
        try:
            submission.states[env_id] = await env_client(ctx, env_id, probe).export_state()
        except UnsupportedOperationError as exc:
            if stateless is None:
                raise
            stateless[env_id] = str(exc)
    for name, agent in ctx.deployed_agents.items():
        if agent.sandbox:
            sandbox = sandbox_of(run, agent)
            submission.files[name] = {p: sandbox.read(p) for p in sandbox.list_files(".")}
            if sandbox.task_files:
                submission.task_files[name] = dict(sandbox.task_files)
    submission.environments = {step: {path: tar.read_bytes() for path, tar in kept.items() if tar.is_file()}
                               for step, kept in run.services.kept_environments.items()}
    return submission


async def restore(run: RunResources, ctx: RunContext, scoring: ScoringConfig, submission: Submission) -> RunContext:
    """``ctx`` with fresh envs loaded with the captured states and fresh sandboxes with the files
    (everything else — replies, collected artifacts, verifications so far — carried over)."""
    fresh = ctx.model_copy(deep=True)
    fresh.deployed_envs = {}
    if submission.environments:  # a rescore: the steps that kept them start fresh containers from these
        run.services.restored_environments = submission.environments
    for env_id, deployed in ctx.deployed_envs.items():
        try:
            step = runtime_step(env_id, deployed.version, scoring)
        except ValueError as exc:
            raise ConfigurationError(f"scoring.runtime: {exc}") from None
        fresh = await execute_step(step, [fresh])
        if env_id in submission.states:  # else kept without a data plane: deployed fresh, as it started
            client = env_client(fresh, env_id, step)
            await client.data_reset()
            await client.data_add([DataPart(data=submission.states[env_id])])
    for name, agent in ctx.deployed_agents.items():
        if agent.sandbox:
            fresh.deployed_agents[name] = restored_agent(run, agent, submission.files.get(name, {}),
                                                         submission.task_files.get(name, {}))
    return fresh


def restored_agent(run: RunResources, agent: DeployedAgent, files: dict[str, bytes],
                   task_files: dict[str, bytes] | None = None) -> DeployedAgent:
    """The agent as the verifiers see it: its replies, and a fresh sandbox holding its files (and knowing
    which of them the task loaded)."""
    sandbox = create_sandbox(run.workdir, agent.agent_name)
    if files:
        sandbox.copy_in(files, ".")
    sandbox.task_files.update(task_files or {})
    instance_id = f"{agent.instance_id}-{run.run_id.rsplit('-', 1)[-1]}-scoring"
    run.services.sandboxes[instance_id] = sandbox
    return agent.model_copy(update={"instance_id": instance_id, "sandbox": str(sandbox.root)})


# -- the attempts ---------------------------------------------------------------------------------


@dataclass
class IsolatedScoring:
    """One task's isolated scoring: the verifier steps, how to run a step, and the attempts."""

    steps: Sequence[StepModel]
    """The verifier steps (see :func:`~prefect_agentenv.documents.scoring.split_for_isolation`)."""
    scoring: ScoringConfig
    runner: Runner
    attempts: int = 0
    submission: Submission | None = None
    """What :meth:`run` captured (kept for a later rescore too)."""
    _current: DagScheduler | None = None
    _stopped: str | None = None
    _graph: StepGraph | None = None

    @property
    def graph(self) -> StepGraph:
        """The verifiers' graph, resolved once for every attempt."""
        if self._graph is None:
            self._graph = StepGraph.of(self.steps)
        return self._graph

    def stop(self, reason: str) -> None:
        """Stop the attempt in flight (the run was stopped); no further attempt starts."""
        self._stopped = reason
        if self._current is not None:
            self._current.stop(reason)

    async def run(self, parent: RunResources, rollout: ScheduleResult) -> ScheduleResult:
        """Capture the rollout's submission, score it in fresh scoring runs; the rollout's result
        with the verifiers' records and verifications of the last attempt."""
        if not self.steps:
            return rollout
        try:
            submission = self.submission = await capture(parent, rollout.context)
        except (AgentEnvError, OSError) as exc:  # the run still ends with a report saying why
            failed = _unrestored(DagScheduler(self.steps, self.runner, graph=self.graph), rollout.context,
                                 f"capturing the submission failed: {exc}")
            return _combined(rollout, failed, 0)
        return _combined(rollout, await self.score(parent, rollout.context, submission), self.attempts)

    async def score(self, parent: RunResources, ctx: RunContext, submission: Submission) -> ScheduleResult:
        """Score ``submission`` in a fresh scoring run per attempt, until one scores without an
        error or the retries are spent; the last attempt's result (``attempts`` says how many ran)."""
        last = self.scoring.retries.max_retries + 1
        result: ScheduleResult | None = None
        for attempt in range(1, last + 1):
            if self._stopped and result is not None:
                break
            self.attempts = attempt
            result, error = await self._attempt(parent, ctx, submission, attempt)
            if error is None:
                break
            logger.warning("isolated scoring attempt %d of %d failed: %s", attempt, last,
                           redact(error, parent.redact))
        assert result is not None
        return result

    async def _attempt(self, parent: RunResources, ctx: RunContext, submission: Submission,
                       attempt: int) -> tuple[ScheduleResult, str | None]:
        async with open_scoring_run(parent, attempt) as run:
            try:
                fresh = await restore(run, ctx, self.scoring, submission)
            except (AgentEnvError, OSError) as exc:
                failed = _unrestored(DagScheduler(self.steps, self.runner, graph=self.graph), ctx,
                                     f"restoring the submission failed: {exc}")
                return failed, str(exc)
            scheduler = self._current = DagScheduler(self.steps, self.runner, initial=fresh, graph=self.graph)
            if self._stopped:
                scheduler.stop(self._stopped)
            result = await scheduler.run()
        return result, _attempt_error(result)


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
    first = next(iter(result.records.values()), None)
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
