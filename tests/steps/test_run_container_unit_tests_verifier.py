"""run_container_unit_tests_verifier: needs a docker daemon; without one, a clear error and no traceback."""

from __future__ import annotations

import pytest
from steps.helpers import run_doc, states

from prefect_agentenv.documents import validate_data
from prefect_agentenv.steps.run_container_unit_tests_verifier import RunContainerUnitTestsVerifierStep, _row

pytestmark = pytest.mark.usefixtures("agentenv_home")

STEP = {"id": "tests", "type": "run_container_unit_tests_verifier", "sandbox_name": "vm", "container_name": "task",
        "command": "bash /tests/test.sh", "timeout_sec": 60, "reward_path": "/logs/verifier/reward.txt"}


def test_agentenvs_fields_are_read_and_its_vm_sandbox_name_is_a_warning() -> None:
    result = validate_data([STEP])

    assert result.ok, [p.render() for p in result.problems]
    step = result.document.steps[0] if result.document else None
    assert isinstance(step, RunContainerUnitTestsVerifierStep)
    assert (step.timeout_seconds, step.verifier_id) == (60, "tests")
    assert step.ignored_fields == ["sandbox_name"]


def test_a_reward_file_scores_the_run_whatever_the_exit_code() -> None:
    step = RunContainerUnitTestsVerifierStep.model_validate(STEP)

    assert _row(step, 0, {"/logs/verifier/reward.txt": "0.5\n"})[0].score == 0.5
    assert _row(step, 1, {"/logs/verifier/reward.txt": 1})[1] is True
    row, passed = _row(step, 0, {"/logs/verifier/reward.txt": None})
    assert (row.score, passed) == (0.0, False) and "missing" in (row.justification or "")


async def test_without_a_docker_daemon_the_step_fails_with_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # A daemon address nothing listens on: `docker info` fails here whatever the machine has.
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")

    report = await run_doc([STEP], task_id="no-docker")

    assert states(report) == {"tests": "failed"}
    assert "no docker daemon answers here" in (report.error or "")
    assert "Traceback" not in (report.error or "")
