"""The step types as Prefect tasks in a flow of one's own (the documented example flow): context in,
context out, everything stopped when the run block ends."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import httpx
import pytest
from prefect import flow

from prefect_agentenv.exceptions import TaskDocumentError
from prefect_agentenv.tasks import agentenv_run, deploy_env
from prefect_reads import settled_task_runs

pytestmark = pytest.mark.usefixtures("prefect_harness", "agentenv_home")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "reply_check_flow.py"


def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("reply_check_flow", EXAMPLE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_the_example_flow_chains_step_tasks_and_stops_everything_at_exit() -> None:
    module = example()
    state = await module.reply_check(return_state=True)
    assert state.is_completed(), state.message
    ctx = await state.result()
    assert ctx.prompt_responses["reply"].response == module.PLAN["plan"]["reply"]
    assert ctx.metadata.verifications["tone"].score is not None
    with pytest.raises(httpx.HTTPError):  # the env was stopped when the agentenv_run block ended
        httpx.get(f"{ctx.deployed_envs['email'].base_url}/.well-known/agent-env.json", timeout=2)
    runs = await settled_task_runs([state.state_details.flow_run_id], at_least=4)
    assert sorted(r.name.rsplit("-", 1)[0] for r in runs) == ["deploy_agent", "deploy_env", "prompt_agent",
                                                              "rubrics_verifier"]
    assert all(r.state and r.state.is_completed() for r in runs)


async def test_a_misspelt_field_names_itself() -> None:
    @flow
    async def typo() -> None:
        async with agentenv_run() as ctx:
            await deploy_env(ctx, env_idd="email")

    with pytest.raises(TaskDocumentError, match="env_idd"):
        await typo()


def test_every_built_in_step_type_is_a_task() -> None:
    from importlib.metadata import entry_points

    import prefect_agentenv.tasks as tasks

    built_in = {ep.name for ep in entry_points(group="prefect_agentenv.steps")
                if ep.dist is not None and ep.dist.name == "prefect-agentenv"}
    assert built_in and built_in <= set(tasks.__all__)
    assert all(getattr(tasks, name).name == name for name in built_in)
