"""An A2A agent on a Harbor task acts inside the task's environment through the MCP server it is given.

The reference ``llm`` agent runs confined, on the mock model; the model asks for the instruction's command,
the agent calls the environment's ``bash`` tool, and the command runs in the task's container. An agent that
cannot be given MCP servers is refused by name, never run outside the environment. Needs the local docker
daemon (`make docker-up`).
"""

from __future__ import annotations

import io
import shutil
import sys
import tarfile
from pathlib import Path

import pytest

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.engine.submission_record import read_submission
from steps.test_harbor_tasks import DATASET, containers_of, run_task, run_task_and_id, scores

pytestmark = pytest.mark.usefixtures("agentenv_home")

ASK = "Run the shell command `{command}` and reply with only what it prints.\n"


@pytest.fixture(scope="module")
def daemon() -> None:
    from image_mode import require_image_mode

    require_image_mode()


async def test_an_a2a_agent_acts_inside_the_environment_through_its_mcp_server(daemon: None) -> None:
    report, run_id = await run_task_and_id("shell-in-environment", "llm")

    reply = report.context.prompt_responses["agent"]
    assert report.error is None, report.error
    assert "only in the image" in reply.response and "seeded by the image" in reply.response, reply
    assert reply.tool_call_count and reply.tool_call_count >= 1 and reply.model == "mock"
    assert scores(report) == {"verifier": 1.0}, "the command ran in the workdir"
    agent = report.context.deployed_agents["default-agent"]
    assert agent.a2a_agent_id == "llm" and agent.confinement is not None and agent.confinement.confined
    assert agent.confinement.network == "confined", "its network is its own: the model and the environment's server"
    assert any(door.startswith("mcp 127.0.0.1:") for door in agent.confinement.doors), agent.confinement.doors
    assert report.model_calls is not None and report.model_calls.by_role["agent"].calls >= 1, "through the gateway"
    assert report.teardown and all(entry.ok for entry in report.teardown), report.teardown
    assert containers_of(run_id) == []
    with get_artifact_store() as store:  # kept for a rescore, as for any agent
        kept = read_submission(store, run_id).submission().environments["verifier"]["/app"]
    with tarfile.open(fileobj=io.BytesIO(kept)) as tar:
        assert b"only in the image" in tar.extractfile("app/found.txt").read()  # type: ignore[union-attr]


async def test_an_a2a_agent_serves_every_step_of_a_multi_step_task_in_one_environment(
        daemon: None, tmp_path: Path) -> None:
    task = tmp_path / "multi-step"
    shutil.copytree(DATASET / "multi-step", task)
    (task / "steps" / "write" / "instruction.md").write_text(ASK.format(command="echo quiet > word.txt; cat word.txt"))
    (task / "steps" / "shout" / "instruction.md").write_text(
        ASK.format(command="tr a-z A-Z < word.txt > shout.txt; ls; cat shout.txt"))

    report = await run_task(task, "llm")

    assert report.error is None, report.error
    assert scores(report) == {"verifier-write": 1.0, "verifier-shout": 1.0}, report.context.metadata.verifications
    shout = report.context.prompt_responses["agent-shout"]
    assert "QUIET" in shout.response and "step-two.log" in shout.response, "the second step's files are there"
    assert list(report.context.deployed_agents) == ["default-agent"], "one agent, prompted once a step"


async def test_what_an_a2a_agent_s_command_sees_is_the_environment_only(daemon: None, tmp_path: Path) -> None:
    task = tmp_path / "env-in-environment"
    shutil.copytree(DATASET / "shell-in-environment", task)
    (task / "instruction.md").write_text(ASK.format(command="env | sort; pwd"))

    report = await run_task(task, "llm")

    seen = report.context.prompt_responses["agent"].response
    assert "PWD=/app" in seen, seen
    for secret in ("PREFECT_", "AGENTENV_HOME", "OPENAI", "ANTHROPIC", "127.0.0.1", sys.executable):
        assert secret not in seen, f"{secret} reached the agent's command: {seen}"


async def test_a_task_s_own_stdio_mcp_server_runs_in_the_environment_and_is_given_to_the_agent(daemon: None) -> None:
    """mcp-tool's ``[[environment.mcp_servers]]`` is a stdio server of its image; the agent calls its tool through
    the loopback server the run serves it on, and the tool writes in the container (the verifier reads it)."""
    report, run_id = await run_task_and_id(DATASET.parent / "mcp-tool", "llm")

    reply = report.context.prompt_responses["agent"]
    assert report.error is None, report.error
    assert "stamped harbor: only in the image" in reply.response, reply
    assert scores(report) == {"verifier": 1.0}, "the tool wrote /app/stamp.txt in the environment"
    agent = report.context.deployed_agents["default-agent"]
    assert agent.confinement is not None and agent.confinement.network == "confined"
    mcp_doors = [door for door in agent.confinement.doors if door.startswith("mcp 127.0.0.1:")]
    assert len(mcp_doors) == 2, ("the environment's server and the task's, each a door", agent.confinement.doors)
    assert not report.context.metadata.unsupported_agent_config
    assert report.teardown and all(entry.ok for entry in report.teardown), report.teardown
    assert any(entry.label == "task MCP server stamper" for entry in report.teardown), report.teardown
    assert containers_of(run_id) == []


async def test_a_task_s_mcp_server_at_a_sidecar_s_url_is_relayed_to_the_agent(daemon: None) -> None:
    """sidecar-tool's server runs in a compose sidecar (in the main container's network namespace) at
    ``http://notes:8000/mcp``; the agent reaches it through a loopback relay into that network, and the tests
    ask the sidecar, by its service name, what it was told."""
    report, run_id = await run_task_and_id(DATASET.parent / "sidecar-tool", "llm")

    reply = report.context.prompt_responses["agent"]
    assert report.error is None, report.error
    assert "noted: shipped" in reply.response, ("the sidecar's own answer, its environment variable in it", reply)
    assert scores(report) == {"verifier": 1.0}, "the sidecar holds the note"
    agent = report.context.deployed_agents["default-agent"]
    assert agent.confinement is not None and agent.confinement.network == "confined"
    assert len([d for d in agent.confinement.doors if d.startswith("mcp 127.0.0.1:")]) == 2, agent.confinement.doors
    assert report.teardown and all(entry.ok for entry in report.teardown), report.teardown
    assert containers_of(run_id) == [], "the sidecar went with its environment"


async def test_a_task_s_sse_server_is_read_through_the_relay_and_given_to_the_agent_as_streamable_http(
        daemon: None, tmp_path: Path) -> None:
    """The same sidecar's server over the older SSE transport (its second endpoint named on its stream): the run
    holds the session through its relay (tried again while the sidecar, with no healthcheck here, is not listening
    yet), and the agent gets streamable HTTP, as for every env."""
    task = tmp_path / "sse-tool"
    shutil.copytree(DATASET.parent / "sidecar-tool", task)
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace('transport = "streamable-http"', 'transport = "sse"')
                    .replace("http://notes:8000/mcp", "http://notes:8000/sse"))
    compose = task / "environment" / "docker-compose.yaml"  # no healthcheck: the run tries until it listens
    compose.write_text(compose.read_text().split("    healthcheck:")[0])

    report = await run_task(task, "llm")

    assert report.error is None, report.error
    assert "noted: shipped" in report.context.prompt_responses["agent"].response
    assert scores(report) == {"verifier": 1.0}, "the sidecar holds the note"


async def test_a_task_server_that_does_not_start_fails_the_deploy_with_its_stderr(daemon: None, tmp_path: Path) -> None:
    task = tmp_path / "broken-tool"
    shutil.copytree(DATASET.parent / "mcp-tool", task)
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace('args = ["/opt/task/stamper.py"]', 'args = ["/opt/task/missing.py"]'))

    report = await run_task(task, "llm")

    assert report.outcome != "COMPLETED" and report.context.metadata.verifications.get("verifier") is None
    assert "the task's MCP server 'stamper' (python3) did not start in the environment" in (report.error or "")
    assert "missing.py" in (report.error or ""), "the end of its stderr says why"


@pytest.mark.usefixtures("prefect_harness")
async def test_an_a2a_agent_that_cannot_be_given_mcp_servers_is_refused_by_name(daemon: None) -> None:
    from prefect_agentenv.blocks import A2AAgent

    legacy = Path(__file__).resolve().parents[1] / "protocols" / "legacy_a2a_agent.py"
    await A2AAgent(command=[sys.executable, str(legacy), "--host", "{host}", "--port", "{port}"],
                   card_path="/.well-known/agent.json", version="0.3-test",
                   install_paths=[str(legacy.parent)]).save("harbor-legacy-agent", overwrite=True)

    report = await run_task("hello-world", "harbor-legacy-agent")

    assert "agent 'harbor-legacy-agent' cannot act inside a Harbor task's environment" in (report.error or "")
    assert "cannot be given the environment's MCP server" in (report.error or ""), "the reason, not only the refusal"
    assert report.outcome == "FAILED" and report.context.metadata.verifications == {}, \
        "not run outside the environment and scored as if it had been inside"



LATE_CHEAT = ("(until [ -e /tests/test.sh ]; do sleep 0.02; done; "
              "echo 'echo 1 > /logs/verifier/reward.txt' > /tests/test.sh) > /dev/null 2>&1 & echo waiting")
"""A command that leaves a process behind to wait for the verifier's tests and replace them with a pass."""


async def test_a_process_the_agent_leaves_behind_cannot_reach_a_separate_verifier(daemon: None, tmp_path: Path) -> None:
    """What an agent's commands start keeps running after its turn, as in Harbor (a task may ask for a server
    its tests then call), so in ``shared`` mode it could meddle with the tests; a separate verifier is a
    fresh environment it never sees (docs/harbor-tasks.md, "The verifier")."""
    task = tmp_path / "late-cheat"
    shutil.copytree(DATASET / "separate-verifier", task)
    (task / "instruction.md").write_text(ASK.format(command=LATE_CHEAT))

    report = await run_task(task, "llm")

    assert "waiting" in report.context.prompt_responses["agent"].response, "the process was left behind"
    assert scores(report) == {"verifier": 0.0}, "the tests it waited for never came to its environment"
