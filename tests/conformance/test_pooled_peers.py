"""A warm pool with peers we did not write: the AgentEnv-SDK env and agent, kept across the task
runs of a benchmark (``pool: true``).

The SDK agent refuses an MCP server it already holds (HTTP 409) and cannot forget one, so a pooled
agent is handed only to task runs that give it the same env instance, and a 409 for the very
server it lists is taken as "already given". The agent calls no hosted model: the built-in mock
model it is started with is pooled along with it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from conformance.conftest import PEERS, PEERS_PYTHON
from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.flows.benchmark import benchmark

pytestmark = pytest.mark.usefixtures("genuine_peers")

STEPS: list[dict[str, Any]] = [
    {"id": "env", "type": "deploy_env", "env_id": "notes-sdk"},
    {"id": "seed", "type": "load_artifact", "env_id": "notes-sdk", "artifact_id": "notes-seed", "depends_on": ["env"]},
    {"id": "agent", "type": "deploy_agent", "a2a_agent_id": "sdk-tool-caller", "agent_name": "caller",
     "env_ids": ["notes-sdk"], "depends_on": ["env"]},
    {"id": "ask", "type": "prompt_agent", "agent_name": "caller", "prompt_id": "ask",
     "prompt": 'add_note {"text": "buy milk"}', "poll_interval_seconds": 0.1, "depends_on": ["seed", "agent"]},
    {"id": "state", "type": "env_state_verifier", "env_id": "notes-sdk", "verifier_id": "state",
     "depends_on": ["ask"], "assertions": [{"assert": "record_count", "id": "two", "resource": "notes", "equals": 2}]},
]


async def run_pooled(tmp_path: Path, name: str, *, epochs: int, concurrency: int) -> list[dict[str, Any]]:
    """Run the pooled benchmark of ``epochs`` task runs; every one must pass. Their reports, by epoch."""
    bench, reports_dir = tmp_path / f"{name}.yaml", tmp_path / f"{name}-reports"
    bench.write_text(yaml.safe_dump({"name": name, "slug": name, "epochs": epochs, "concurrency": concurrency,
                                     "pool": True, "tasks": [{"id": "note", "steps": STEPS}]}))
    state = await benchmark(path=str(bench), report_dir=str(reports_dir), return_state=True)
    assert state.is_completed(), state.message
    reports = [json.loads(p.read_text()) for p in sorted(reports_dir.glob("*-epoch*.json"))]
    assert [r["outcome"] for r in reports] == ["PASSED"] * epochs, [r["error"] for r in reports]
    return reports


@pytest.fixture
def notes_seed(agentenv_home: Path, tmp_path: Path) -> None:
    seed = tmp_path / "notes.json"
    seed.write_text(json.dumps({"notes": [{"id": "n-1", "text": "call Dana"}]}))
    with get_artifact_store() as store:
        store.publish_environment("notes-seed", "notes-sdk", "notes.json", seed)


@pytest.mark.usefixtures("notes_seed")
async def test_one_sdk_agent_and_one_sdk_env_serve_every_task_run_one_at_a_time(tmp_path: Path) -> None:
    reports = await run_pooled(tmp_path, "pooled-sdk-peers", epochs=3, concurrency=1)

    # One process of each served the three task runs; each run saw the seed alone (reset in between).
    for kind, name in (("deployed_envs", "notes-sdk"), ("deployed_agents", "caller")):
        assert len({r["context"][kind][name]["instance_id"] for r in reports}) == 1, kind
    assert all(t["ok"] for r in reports for t in r["teardown"])
    assert all("back to the pool" in t["label"] for r in reports for t in r["teardown"]
               if t["kind"] in ("env", "agent", "model"))


@pytest.mark.usefixtures("notes_seed")
async def test_pooled_sdk_agents_stay_with_their_env_instances_when_task_runs_overlap(tmp_path: Path) -> None:
    reports = await run_pooled(tmp_path, "pooled-sdk-peers-overlapping", epochs=4, concurrency=2)

    # An agent instance is only ever given the one env instance it was first given.
    env_of: dict[str, str] = {}
    for report in reports:
        agent = report["context"]["deployed_agents"]["caller"]["instance_id"]
        env = report["context"]["deployed_envs"]["notes-sdk"]["instance_id"]
        assert env_of.setdefault(agent, env) == env


async def test_an_sdk_agent_that_holds_the_server_already_is_given_it_and_one_that_holds_another_is_not(
        tmp_path: Path) -> None:
    """Against the SDK agent's own mcp-config: the same server again is taken as given; another
    server under a name it holds stays an error (the agent would otherwise keep the old one)."""
    from prefect_agentenv.context import DeployedEnv
    from prefect_agentenv.exceptions import ProtocolError
    from prefect_agentenv.protocols.a2a import A2AClient
    from prefect_agentenv.protocols.agentenv_ext import AgentEnvExtensions
    from prefect_agentenv.run_services.agent_configuration import _give_env
    from servers import Server

    agent = Server([str(PEERS_PYTHON), str(PEERS / "sdk_agent.py")], "/.well-known/agent-card.json",
                   tmp_path / "agent.log", env={"A2A_HOST": "127.0.0.1", "A2A_PORT": "{port}"}, name="sdk agent")
    first = DeployedEnv(env_id="notes-sdk", instance_id="notes-1", mcp_url="http://127.0.0.1:9/mcp")
    other = first.model_copy(update={"instance_id": "notes-2", "mcp_url": "http://127.0.0.1:10/mcp"})
    with agent:
        async with httpx.AsyncClient(timeout=10) as http:
            ext = await AgentEnvExtensions.of(A2AClient(agent.base_url, http=http))
            await _give_env(ext, first)
            await _give_env(ext, first)  # refused with 409 as held; listed under its name: given
            with pytest.raises(ProtocolError) as refused:
                await _give_env(ext, other)
            assert refused.value.code == 409
            assert [(s.name, s.url) for s in await ext.list_mcp_servers()] == [("notes-sdk", first.mcp_url)]
