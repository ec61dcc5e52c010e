"""pi on a Harbor task, on the mock model: its ``bash -c`` acts inside the task's environment
(harnesses/harbor_trial.py says what is asserted). Needs the local docker daemon (`make docker-up`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harnesses.conftest import ROOT, ensure_installed, marked_processes, run_document
from harnesses.harbor_trial import assert_shell_acts_in_the_environment, containers_of

DATASET = ROOT / "examples" / "harbor" / "dataset"
ASK = "Run the shell command `{command}` and reply with only what it prints.\n"

pytestmark = pytest.mark.slow


async def test_pi_runs_its_shell_inside_the_task_environment(harness_home: object, daemon: None) -> None:
    await assert_shell_acts_in_the_environment("pi")


async def test_pi_works_every_step_of_a_multi_step_task_in_one_environment(
        harness_home: object, daemon: None, tmp_path: Path) -> None:
    """Deployed once, at the first step: the environment is started again with its workspace before any step's
    files go in, so what an earlier step did outside the workdir is still there at the next (one container)."""
    task = tmp_path / "multi-step"
    shutil.copytree(DATASET / "multi-step", task)
    (task / "steps" / "write" / "instruction.md").write_text(
        ASK.format(command="echo quiet > word.txt; mkdir -p /opt && echo outside > /opt/first-step.txt; cat word.txt"))
    (task / "steps" / "shout" / "instruction.md").write_text(
        ASK.format(command="tr a-z A-Z < word.txt > shout.txt; ls; cat /opt/first-step.txt shout.txt"))
    await ensure_installed("pi")

    report, run_id = await run_document(task, overrides={"a2a_agent_id": "pi"})

    assert report.error is None, report.error
    scores = {k: v.score for k, v in report.context.metadata.verifications.items()}
    assert scores == {"verifier-write": 1.0, "verifier-shout": 1.0}, report.context.metadata.verifications
    shout = report.context.prompt_responses["agent-shout"].response
    assert "QUIET" in shout and "step-two.log" in shout, ("the second step's starting files are there", shout)
    assert "outside" in shout, ("what the first step wrote outside the workdir is still there", shout,
                                report.context.prompt_responses["agent-write"].response)
    assert list(report.context.deployed_agents) == ["default-agent"], "one harness, prompted once a step"
    assert containers_of(run_id) == [] and marked_processes(run_id) == []
