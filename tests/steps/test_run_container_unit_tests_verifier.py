"""run_container_unit_tests_verifier: the tests run in a container of the local test image where a daemon
answers (`make docker-up`); without one, a clear error and no traceback."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from image_mode import TEST_IMAGE, containers, require_image_mode
from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.documents import validate_data
from prefect_agentenv.steps.run_container_unit_tests_verifier import RunContainerUnitTestsVerifierStep, _row
from steps.helpers import run_doc, states

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


@pytest.fixture(scope="module")
def container() -> Iterator[str]:
    """A running container of the local test image (no network), removed by its id after the module's tests."""
    require_image_mode()
    label = f"agentenv-test.verifier={uuid.uuid4().hex[:8]}"
    started = subprocess.run(["docker", "run", "--detach", "--network", "none", "--label", label, TEST_IMAGE,
                              "python", "-c", "import time; time.sleep(3600)"], capture_output=True, text=True, check=True)
    container_id = started.stdout.strip()
    try:
        yield container_id
    finally:
        subprocess.run(["docker", "rm", "--force", container_id], capture_output=True, check=True)
    assert containers(label) == [], "the test's container was left behind"


async def test_the_tests_run_in_the_container_and_their_exit_code_scores_them(container: str) -> None:
    step = {**STEP, "container_name": container, "reward_path": None, "env_vars": {"WANT": "bookworm"},
            "setup_commands": ["mkdir -p /tests", "printf 'grep -q \"$WANT\" /etc/os-release\\n' > /tests/test.sh"]}
    failing = {**STEP, "id": "failing", "container_name": container, "reward_path": None, "depends_on": ["tests"],
               "command": "echo 'expected 2 got 3' >&2; exit 3"}

    report = await run_doc([step, failing], task_id="container-exit-code")

    assert states(report) == {"tests": "completed", "failing": "failed"}, report.error
    passed = report.context.metadata.verifications["tests"]
    assert passed.score == 1.0 and [r.justification for r in passed.results] == ["exit code 0"]
    failed = report.context.metadata.verifications["failing"]
    assert failed.score == 0.0 and [r.justification for r in failed.results] == ["exit code 3"]
    assert "tests in container" in (report.error or "") and "exited 3: expected 2 got 3" in (report.error or "")


async def test_a_reward_file_written_in_the_container_scores_the_run_and_a_stale_one_never_counts(container: str) -> None:
    write = {**STEP, "container_name": container, "command": "echo 0.5 > /logs/verifier/reward.txt; exit 1",
             "setup_commands": ["mkdir -p /logs/verifier"], "result_paths": ["/logs/verifier/results.json"]}
    write["command"] = "echo '{\"passed\": 2}' > /logs/verifier/results.json; " + write["command"]
    # A reward file left from before must not score the next tests: they write none, and score 0.
    silent = {**STEP, "id": "silent", "container_name": container, "command": "true", "depends_on": ["tests"]}

    report = await run_doc([write, silent], task_id="container-reward")

    assert states(report) == {"tests": "completed", "silent": "completed"}, report.error
    scored = report.context.metadata.verifications["tests"]
    assert [(r.score, r.result, r.justification) for r in scored.results] == [(0.5, "partial", "reward 0.5 (exit code 1)")]
    assert scored.model_extra is not None and scored.model_extra["extracted_files"] == {
        "/logs/verifier/results.json": {"passed": 2}, "/logs/verifier/reward.txt": 0.5}
    stale = report.context.metadata.verifications["silent"]
    assert stale.score == 0.0 and "missing" in (stale.results[0].justification or "")


TEST_SH = """set -e
python3 -c "import sys; sys.path.insert(0, '/app'); from solution import add; assert add(2, 3) == 5"
test ! -e /app/conftest.py
if touch /tests/planted 2>/dev/null; then echo 'the tests folder is writable' >&2; exit 9; fi
if python3 -c "import socket; socket.create_connection(('1.1.1.1', 80), 2)" 2>/dev/null; then exit 8; fi
mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt
"""
PLAN = {"files": [{"path": "/app/solution.py", "content": "def add(a, b):\n    return a + b\n"},
                  {"path": "/app/conftest.py", "content": "import pytest\n"}], "reply": "done"}


def test_a_fresh_container_needs_an_image_and_takes_the_sandbox_fields_only_with_one() -> None:
    both = validate_data([{**STEP, "image": TEST_IMAGE}])
    stray = validate_data([{**STEP, "tests_artifact_id": "t"}])

    assert not both.ok and "exactly one of container_name" in both.problems[0].render()
    assert not stray.ok and "tests_artifact_id go with image" in stray.problems[0].render()


@pytest.fixture
def image_mode() -> None:
    require_image_mode()


@pytest.mark.usefixtures("image_mode")
async def test_a_fresh_container_of_an_image_runs_the_verifiers_tests_on_a_copy_of_the_agents_work(
        tmp_path: Path) -> None:
    (tmp_path / "test.sh").write_text(TEST_SH)
    with get_artifact_store() as store:
        store.publish_files("unit-tests", {"test.sh": tmp_path / "test.sh"})
    steps = [
        {"id": "agent", "type": "deploy_agent", "a2a_agent_id": "scripted", "agent_config": {"plan": PLAN}},
        {"id": "ask", "type": "prompt_agent", "prompt_id": "ask", "prompt": "Write add()."},
        {"id": "tests", "type": "run_container_unit_tests_verifier", "image": TEST_IMAGE, "agent_name": "default-agent",
         "tests_artifact_id": "unit-tests", "command": "bash /tests/test.sh", "timeout_seconds": 60,
         "reward_path": "/logs/verifier/reward.txt"},
    ]

    report = await run_doc(steps, task_id="fresh-container")

    assert states(report)["tests"] == "completed", report.error
    verification = report.context.metadata.verifications["tests"]
    assert [r.justification for r in verification.results] == ["reward 1 (exit code 0)"], verification.model_extra
    record = (verification.model_extra or {})["grading_sandbox"]
    assert record["mechanism"].startswith("docker ") and record["network"] == "none"
    assert record["image"] == TEST_IMAGE and record["set_aside"] == ["/app/conftest.py (removed)"]
    left = subprocess.run(["docker", "ps", "--all", "--quiet", "--filter", "name=agentenv-grading-"],
                          capture_output=True, text=True, check=True)
    assert left.stdout.split() == [], "the fresh container was removed"
