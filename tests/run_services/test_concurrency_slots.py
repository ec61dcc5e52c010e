"""A Prefect global concurrency limit named ``env:<env_id>`` caps the live instances of that env."""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime
from pathlib import Path

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate

from prefect_agentenv.blocks import AgentEnvironment
from prefect_agentenv.documents import validate_data
from prefect_agentenv.envs.catalog import REFERENCE_ENVS
from prefect_agentenv.flows.agent_task import agent_task
from prefect_agentenv.run_services import concurrency_slots

pytestmark = pytest.mark.usefixtures("prefect_harness", "agentenv_home")


def step_end(report: dict, step_id: str) -> float:
    step = next(s for s in report["steps"] if s["id"] == step_id)
    return datetime.fromisoformat(step["started_at"]).timestamp() + step["duration_s"]


async def test_two_runs_never_hold_more_instances_of_an_env_than_its_limit_allows() -> None:
    env_id = f"capped-{uuid.uuid4().hex[:6]}"
    await AgentEnvironment(command=REFERENCE_ENVS["email"].command()).asave(env_id)
    async with get_client() as client:
        await client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=f"env:{env_id}", limit=1))
    concurrency_slots.forget_limit_names()  # a listing read earlier in this process has no such limit

    def document(task_id: str):  # type: ignore[no-untyped-def]
        return validate_data([{"id": "env", "type": "deploy_env", "env_id": env_id, "depends_on": []},
                              {"id": "use", "type": "test_sleep", "seconds": 1.0}], default_id=task_id).document

    try:
        states = await asyncio.gather(*(agent_task(document(name), return_state=True) for name in ("one", "two")))
        first, second = sorted([await s.result() for s in states], key=lambda r: step_end(r, "env"))
        assert first["status"] == second["status"] == "completed"
        # The second instance could start only once the first run had finished with its env.
        assert step_end(second, "env") > step_end(first, "use")
        async with get_client() as client:
            limit = await client.read_global_concurrency_limit_by_name(f"env:{env_id}")
        assert limit.active_slots == 0  # both slots given back at teardown
    finally:
        async with get_client() as client:
            await client.delete_global_concurrency_limit_by_name(f"env:{env_id}")
        concurrency_slots.forget_limit_names()


async def test_a_deploy_that_no_limit_names_asks_the_api_for_no_slot(monkeypatch: pytest.MonkeyPatch) -> None:
    # Asking is a write on the API's database (a busy SQLite server answers 503 and the client
    # backs off for seconds); the listing of limit names says there is nothing to ask for.
    from prefect_agentenv.runtime.resources.run import RunResources

    async def refuse(name: str) -> None:
        raise AssertionError(f"a slot of {name} was requested")

    concurrency_slots.forget_limit_names()
    monkeypatch.setattr(concurrency_slots, "_acquire", refuse)
    run = RunResources(run_id="r", task_id="t", workdir=Path("."))
    await concurrency_slots.hold_slot(run, "env", f"unlimited-{uuid.uuid4().hex[:6]}", owner_step="env")
    assert not run.teardown.pending()


async def test_an_api_that_drops_every_connection_is_unreachable_after_one_try_not_a_minute_of_retries() -> None:
    # Prefect's client retries a dropped connection with back-off (about a minute in all); a step
    # asking which tags have limits would wait that long for an API that is gone.
    from prefect.settings import PREFECT_API_URL, temporary_settings

    tries: list[int] = []

    async def drop(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        tries.append(1)
        writer.close()

    server = await asyncio.start_server(drop, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    concurrency_slots.forget_limit_names()
    try:
        with temporary_settings({PREFECT_API_URL: f"http://127.0.0.1:{port}/api"}):
            with pytest.raises(concurrency_slots.ApiUnreachable):
                await asyncio.wait_for(concurrency_slots.limit_names(), timeout=30)
    finally:
        server.close()
        await server.wait_closed()
        concurrency_slots.forget_limit_names()
    assert len(tries) == 1
