"""The step types as Prefect tasks, for flows of your own.

Each task takes the run context and the step's fields, and returns the context with what the step
added, exactly as the step does inside a task document::

    from prefect import flow
    from prefect_agentenv.tasks import agentenv_run, deploy_agent, deploy_env, prompt_agent, rubrics_verifier

    @flow
    async def reply_check() -> float | None:
        async with agentenv_run("reply-check") as ctx:
            ctx = await deploy_env(ctx, env_id="email")
            ctx = await deploy_agent(ctx, agent_name="assistant", a2a_agent_id="llm", env_ids=["email"])
            ctx = await prompt_agent(ctx, agent_name="assistant", prompt_id="reply", prompt="Reply to Dana.")
            ctx = await rubrics_verifier(ctx, prompt_id="reply", verifier_id="tone",
                                         criteria=[{"id": "polite", "criterion": "The reply is polite."}])
        return ctx.metadata.verifications["tone"].score

``agentenv_run`` opens a run (the same run scope a flow run of a task document opens): it holds
what the steps start (envs, agents, sandboxes, the mock model) and stops all of it when the block
exits, however it exits. Each task runs its step through the engine's ``execute_step``, as a task
document's step runs: ``${VAR}`` placeholders are filled from the environment, a ``retry_config``
retrying the step itself is honoured, and a failure under ``fail_task_on_error: false`` is
recorded in the context it returns (``metadata.failed_steps``; for a verifier, an errored
verification scoring 0) instead of raised. Fields are validated like a document's (``id``
defaults to the step type); a bad field raises a ``TaskDocumentError`` naming it. Step types
from plugins are reached with :func:`step_task`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from prefect import Task, task
from prefect.cache_policies import NO_CACHE
from pydantic import ValidationError

from prefect_agentenv.context import RunContext
from prefect_agentenv.documents.problems import Problem
from prefect_agentenv.engine.execute import execute_step
from prefect_agentenv.engine.run_scope import open_run
from prefect_agentenv.exceptions import TaskDocumentError
from prefect_agentenv.runtime.resources.overrides import RunOverrides
from prefect_agentenv.steps.base import StepModel
from prefect_agentenv.steps.registry import get_step

__all__ = [
    "agentenv_run", "step_task", "deploy_env", "load_artifact", "deploy_agent", "prompt_agent",
    "rubrics_verifier", "collect_artifacts", "env_outcome_verifier", "env_state_verifier", "reset_env",
    "sync_env_clock", "register_env_triggers", "snapshot_env", "agent_prompt_response_verifier",
    "aggregate_verifiers", "verify_sandbox", "teardown_sandboxes", "deploy_sandbox", "review", "run_code",
    "deploy_human_agent", "peer_agents", "modify_env_tool_access", "register_agent_triggers",
    "snapshot_agent_state", "run_container_unit_tests_verifier", "verify_env_card", "verify_a2a_core_protocol",
    "harbor_environment", "harbor_agent", "harbor_verifier",
]


@asynccontextmanager
async def agentenv_run(task_id: str = "flow", *, keep: bool = False,
                       overrides: dict[str, str] | None = None) -> AsyncIterator[RunContext]:
    """A run for the step tasks called inside it; yields an empty context, tears everything down at exit.

    Args:
        task_id: Names the run's folder and the files it stores.
        keep: Keep agent sandboxes after the run.
        overrides: Per-run overrides, as for a task document (``a2a_agent_id``, ``judge_model``, …).
    """
    async with open_run(task_id, keep=keep, overrides=RunOverrides.parse(overrides)):
        yield RunContext()


def step_task(step_type: str) -> Task[..., Any]:
    """A Prefect task running one step of ``step_type`` (any registered type, plugins included)."""

    async def run_step(ctx: RunContext | None = None, **fields: Any) -> RunContext:
        return await execute_step(_step_of(step_type, fields), [ctx or RunContext()])

    run_step.__doc__ = f"Run a ``{step_type}`` step on ``ctx``; the keyword arguments are its fields."
    return task(name=step_type, cache_policy=NO_CACHE, persist_result=False)(run_step)


def _step_of(step_type: str, fields: dict[str, Any]) -> StepModel:
    """The step the task's keyword arguments describe, validated as a document's step would be.

    Raises:
        TaskDocumentError: a field is wrong; each problem names it.
    """
    data = {"id": step_type, **fields, "type": step_type}
    try:
        return get_step(step_type).model.model_validate(data)
    except ValidationError as exc:
        raise TaskDocumentError([Problem(f"{'.'.join(str(p) for p in e['loc']) or step_type}: {e['msg']}",
                                         step_id=str(data["id"])) for e in exc.errors()], step_type) from None


deploy_env = step_task("deploy_env")
load_artifact = step_task("load_artifact")
deploy_agent = step_task("deploy_agent")
prompt_agent = step_task("prompt_agent")
rubrics_verifier = step_task("rubrics_verifier")
collect_artifacts = step_task("collect_artifacts")
env_outcome_verifier = step_task("env_outcome_verifier")
env_state_verifier = step_task("env_state_verifier")
reset_env = step_task("reset_env")
sync_env_clock = step_task("sync_env_clock")
register_env_triggers = step_task("register_env_triggers")
snapshot_env = step_task("snapshot_env")
agent_prompt_response_verifier = step_task("agent_prompt_response_verifier")
aggregate_verifiers = step_task("aggregate_verifiers")
verify_sandbox = step_task("verify_sandbox")
teardown_sandboxes = step_task("teardown_sandboxes")
deploy_sandbox = step_task("deploy_sandbox")
review = step_task("review")
run_code = step_task("run_code")
deploy_human_agent = step_task("deploy_human_agent")
peer_agents = step_task("peer_agents")
modify_env_tool_access = step_task("modify_env_tool_access")
register_agent_triggers = step_task("register_agent_triggers")
snapshot_agent_state = step_task("snapshot_agent_state")
run_container_unit_tests_verifier = step_task("run_container_unit_tests_verifier")
verify_env_card = step_task("verify_env_card")
verify_a2a_core_protocol = step_task("verify_a2a_core_protocol")
harbor_environment = step_task("harbor_environment")
harbor_agent = step_task("harbor_agent")
harbor_verifier = step_task("harbor_verifier")
