"""A harness on the Harbor task shell-in-environment, on the mock model: what every such test asserts.

Its shell acted inside the task's environment (its working folder was the workdir, it read a file only the
image holds), the verifier scored 1.0, it stayed confined with its model through the run's gateway and one
more door (the environment's exec path, token-guarded), the workdir its commands wrote through its mounted
workspace was kept for a rescore, and nothing was left running. Needs the local docker daemon (`make docker-up`).
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
from pathlib import Path

from harnesses.conftest import ROOT, ensure_installed, marked_processes, run_document
from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.engine.submission_record import read_submission
from prefect_agentenv.runtime.launch.docker import RUN_LABEL

TASK = ROOT / "examples" / "harbor" / "dataset" / "shell-in-environment"


def containers_of(run_id: str) -> list[str]:
    listed = subprocess.run(["docker", "ps", "--all", "--quiet", "--filter", f"label={RUN_LABEL}={run_id}"],
                            capture_output=True, text=True, check=True)
    return listed.stdout.split()


async def assert_shell_acts_in_the_environment(harness: str) -> None:
    await ensure_installed(harness)

    report, run_id = await run_document(TASK, overrides={"a2a_agent_id": harness})

    reply = report.context.prompt_responses["agent"]
    assert report.error is None, report.error
    assert "only in the image" in reply.response, ("its shell read a file only the task's image holds", reply)
    assert "seeded by the image" in reply.response, "and one of the workdir's, in the workdir"
    assert reply.tool_call_count and reply.tool_call_count >= 1 and reply.model == "mock"
    assert report.context.metadata.verifications["verifier"].score == 1.0, "the command ran in the workdir"
    agent = report.context.deployed_agents["default-agent"]
    assert agent.a2a_agent_id == harness and agent.confinement is not None and agent.confinement.confined
    assert any(door.startswith("environment 127.0.0.1:") and door.endswith("/exec") for door in agent.confinement.doors)
    assert agent.confinement.network == "confined", "its network is its own: the model and the exec door only"
    assert report.model_calls is not None and report.model_calls.by_role["agent"].calls >= 1, "through the gateway"
    assert report.teardown and all(entry.ok for entry in report.teardown), report.teardown
    assert containers_of(run_id) == [] and marked_processes(run_id) == []
    with get_artifact_store() as store:  # kept for a rescore: the workdir its commands wrote, through its mount
        kept = read_submission(store, run_id).submission().environments["verifier"]["/app"]
    with tarfile.open(fileobj=io.BytesIO(kept)) as tar:
        assert b"only in the image" in tar.extractfile("app/found.txt").read()  # type: ignore[union-attr]


async def environment_of_its_shell(harness: str, tmp_path: Path) -> str:
    """What ``env`` prints when the harness runs it on a copy of shell-in-environment (an attacker's first look)."""
    task = tmp_path / "env-in-environment"
    shutil.copytree(TASK, task)
    (task / "instruction.md").write_text("Run the shell command `env | sort` and reply with only what it prints.\n")
    await ensure_installed(harness)

    report, run_id = await run_document(task, overrides={"a2a_agent_id": harness})

    assert report.error is None, report.error
    assert containers_of(run_id) == [] and marked_processes(run_id) == []
    return report.context.prompt_responses["agent"].response
