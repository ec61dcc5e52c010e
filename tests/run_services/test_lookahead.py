"""The run's lookahead starts the mock model its agents will call, once, and leaves nothing behind."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from prefect_agentenv.documents import validate_data
from prefect_agentenv.jsontypes import JsonValue
from prefect_agentenv.run_services import agents
from prefect_agentenv.run_services.lookahead import start_lookahead, stop_lookahead
from prefect_agentenv.runtime.resources.leftovers import _marked_processes
from prefect_agentenv.runtime.resources.run import RunResources, bind_run, unbind_run
from prefect_agentenv.steps.base import StepModel


def _steps(*agent_ids: str) -> list[StepModel]:
    """An env, then each agent given to it."""
    steps: list[JsonValue] = [{"id": "env", "type": "deploy_env", "env_id": "email"}]
    steps += [{"id": f"agent-{n}", "type": "deploy_agent", "a2a_agent_id": agent_id, "agent_name": f"a{n}",
               "env_ids": ["email"], "depends_on": ["env"]} for n, agent_id in enumerate(agent_ids)]
    result = validate_data({"id": "t", "steps": steps})
    assert result.document is not None, [p.render() for p in result.problems]
    return list(result.document.steps)


@pytest.fixture
async def run(tmp_path: Path) -> AsyncIterator[RunResources]:
    resources = RunResources(run_id=f"lookahead-{uuid.uuid4().hex[:8]}", task_id="t", workdir=tmp_path)
    token = bind_run(resources)
    try:
        yield resources
    finally:
        await stop_lookahead(resources, None)  # launches a test left running
        await resources.teardown.stop_all(10)
        unbind_run(token)


@pytest.fixture
def starts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every start of a mock model, by the task id of its run."""
    made: list[str] = []
    real = agents._start_mock_model

    async def counted(run: RunResources) -> str:
        made.append(run.task_id)
        return await real(run)

    monkeypatch.setattr(agents, "_start_mock_model", counted)
    return made


async def test_an_agent_that_calls_a_model_finds_the_mock_model_started_by_the_lookahead(
        run: RunResources, starts: list[str]) -> None:
    lookahead = start_lookahead(run, _steps("scripted", "llm", "llm"))
    assert lookahead is not None
    await asyncio.wait_for(lookahead, 60)
    url = run.services.mock_model_url
    assert url is not None and starts == ["t"]
    # The step asks the way start_agent does: the same server (behind the run's gateway), no second start.
    endpoint = await agents.model_for(run, "agent", None)
    assert (endpoint.upstream_base_url, endpoint.is_mock) == (url, True)
    assert endpoint.base_url == run.services.gateway.gateway.openai_base_url
    assert starts == ["t"]
    labels = [entry.label for entry in run.teardown.pending()]
    assert sum(label.startswith("mock model") for label in labels) == 1


async def test_an_agent_known_to_call_no_model_gets_no_mock_model(run: RunResources, starts: list[str]) -> None:
    lookahead = start_lookahead(run, _steps("scripted"))
    assert lookahead is not None
    await asyncio.wait_for(lookahead, 30)
    assert starts == [] and run.services.mock_model_url is None


async def test_a_document_without_agents_has_no_lookahead(run: RunResources) -> None:
    assert start_lookahead(run, _steps()) is None


async def test_a_run_ending_while_the_mock_model_starts_leaves_nothing_serving(run: RunResources) -> None:
    lookahead = start_lookahead(run, _steps("llm"))
    for _ in range(3000):  # the agent is resolved, then the mock model starts
        if run.services.mock_model_start.task is not None:
            break
        await asyncio.sleep(0.001)
    start = run.services.mock_model_start.task
    assert start is not None, "the lookahead never started the mock model"
    await stop_lookahead(run, lookahead)
    url = run.services.mock_model_url  # set only if the start had finished before the stop
    await run.teardown.stop_all(10)
    assert not [e.label for e in run.teardown.pending() if e.kind == "model"]
    if url is None:
        assert start.cancelled() and run.services.mock_model_start.task is None
    else:
        assert not await _accepts(url)


async def test_a_mock_model_start_cancelled_before_it_ran_is_forgotten(run: RunResources) -> None:
    """A stop landing between the start's creation and its first step (a busy loop) must not leave
    the cancelled start as the run's: the next step that needs the model would meet it."""
    waiter = asyncio.ensure_future(agents.ensure_mock_model(run))
    await asyncio.sleep(0)  # the waiter creates the start; the start has not run yet
    start = run.services.mock_model_start.task
    assert start is not None and not start.done()
    start.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert start.cancelled() and run.services.mock_model_start.task is None
    url = await agents.ensure_mock_model(run)  # the next one starts it again
    assert await _accepts(url)


async def _accepts(url: str) -> bool:
    parts = urlsplit(url)
    try:
        _, writer = await asyncio.open_connection(parts.hostname, parts.port)
    except OSError:
        return False
    writer.close()
    return True


async def test_the_one_agent_is_launched_beside_the_envs_and_taken_by_its_step(run: RunResources) -> None:
    steps = _steps("scripted")
    lookahead = start_lookahead(run, steps)
    assert lookahead is not None
    await asyncio.wait_for(lookahead, 30)
    launched, started = run.services.early_agents["agent-0"]
    early_instance, _ = await asyncio.wait_for(started, 60)
    agent, sandbox = await agents.start_agent(steps[1], agent_name="a0", a2a_agent_id="scripted")
    assert agent.instance_id == early_instance.instance_id and run.services.early_agents == {}
    assert [e.kind for e in run.teardown.pending() if e.kind == "agent"] == ["agent"]  # launched once
    assert (await run.services.http.get(agent.a2a_url + "/.well-known/agent-card.json")).status_code == 200  # type: ignore[union-attr]
    assert sandbox.root.is_dir()


async def test_an_agent_launched_for_a_step_that_never_runs_is_stopped_at_teardown(run: RunResources) -> None:
    lookahead = start_lookahead(run, _steps("scripted"))
    for _ in range(3000):
        if _mock_processes(run):
            break
        await asyncio.sleep(0.01)
    assert _mock_processes(run), "the lookahead never launched the agent"
    await stop_lookahead(run, lookahead)  # the run ends: its env failed, say
    assert run.services.early_agents == {}
    await run.teardown.stop_all(10)
    assert await _all_gone(run)


async def _all_gone(run: RunResources) -> bool:
    """No process of the run is left once SIGKILL has been delivered (a killed process may show in
    ``/proc`` for a moment)."""
    for _ in range(100):
        if not _mock_processes(run):
            return True
        await asyncio.sleep(0.05)
    return False


def _mock_processes(run: RunResources) -> list[int]:
    """The processes the run started (mock model, agents): they carry its run id."""
    return _marked_processes({run.run_id}).get(run.run_id, [])


async def test_an_agent_launched_before_its_envs_gets_their_mcp_doors_when_its_step_gives_them(
        run: RunResources) -> None:
    steps = _steps("scripted")
    lookahead = start_lookahead(run, steps)
    assert lookahead is not None
    await asyncio.wait_for(lookahead, 30)
    _, started = run.services.early_agents["agent-0"]
    early_instance, _ = await asyncio.wait_for(started, 60)
    assert early_instance.confinement is not None and early_instance.confinement.doors == []

    agent, _ = await agents.start_agent(steps[1], agent_name="a0", a2a_agent_id="scripted",
                                        mcp_servers={"email": "http://127.0.0.1:5999/mcp"})

    assert agent.instance_id == early_instance.instance_id
    assert agent.confinement is not None and agent.confinement.doors == ["mcp 127.0.0.1:5999/mcp"]
