"""Image mode end to end: an agent registered with an ``image`` is deployed as a container of the local test
image (`make docker-up`), answers on the loopback, records the isolation it ran with, and is removed when
the run ends."""

from __future__ import annotations

import pytest

from image_mode import ECHO_AGENT, TEST_IMAGE, bridge_network, containers, require_image_mode
from prefect_agentenv.results.rows import SetupFingerprint
from prefect_agentenv.results.store.fingerprint import setup_from_report
from prefect_agentenv.runtime.launch.docker import INSTANCE_LABEL

from .helpers import run_doc, states

pytestmark = pytest.mark.usefixtures("agentenv_home")


@pytest.fixture(scope="session")
def daemon_version() -> str:
    """Session-scoped so that it is asked before the Prefect harness starts: a skip costs nothing."""
    return require_image_mode()


async def test_an_agent_with_an_image_runs_in_a_container_says_so_and_is_removed_when_the_run_ends(
        daemon_version: str, prefect_harness: None) -> None:
    from prefect_agentenv.blocks import A2AAgent

    await A2AAgent(image=TEST_IMAGE, command=["python", "-c", ECHO_AGENT, "{host}", "{port}"],
                   card_path="/.well-known/agent.json", version="1.0.0",
                   startup_timeout_seconds=60).save("image-echo", overwrite=True)
    report = await run_doc([
        {"id": "agent", "type": "deploy_agent", "a2a_agent_id": "image-echo", "agent_name": "echo", "depends_on": []},
        {"id": "ask", "type": "prompt_agent", "agent_name": "echo", "prompt_id": "ask", "prompt": "hello there"},
    ], task_id="image-mode")

    assert report.status == "completed", report.error
    assert states(report) == {"agent": "completed", "ask": "completed"}
    agent = report.context.deployed_agents["echo"]
    assert agent.a2a_url.startswith("http://127.0.0.1:")
    # It answered from inside a container: its pid 1 is in docker's cgroup.
    reply = report.context.prompt_responses["ask"].response
    assert reply.startswith("echo: hello there (cgroup: ") and "/docker/" in reply, reply
    # Image mode keeps its own isolation and says so, in the run context and in the result's setup.
    network = "bridge" if bridge_network() else "host"
    assert agent.confinement is not None and agent.confinement.confined
    assert (agent.confinement.mechanism, agent.confinement.network) == (f"docker {daemon_version}", network)
    setup = setup_from_report(report, SetupFingerprint())
    assert [a.confinement for a in setup.agents] == ["docker" if network == "bridge" else "docker, host network"]
    assert containers(f"{INSTANCE_LABEL}={agent.instance_id}") == [], "the run's teardown removed its container"
