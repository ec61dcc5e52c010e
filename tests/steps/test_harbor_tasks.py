"""Harbor task folders run end to end on the local docker daemon (`make docker-up`): the oracle passes, nop
fails without an infrastructure failure, every reward.json key is a row, an agent past its timeout is still
graded, a separate verifier sees only the declared artifacts, a multi-step task stops under min_reward, and
no container is left. Without a daemon these tests skip and say why."""

from __future__ import annotations

import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from image_mode import require_image_mode
from prefect_agentenv.documents import validate_file
from prefect_agentenv.flows.task_runner import run_task_document
from prefect_agentenv.results.task_report import TaskReport
from prefect_agentenv.runtime.harbor.images import BuildSource, ensure_image
from prefect_agentenv.runtime.launch.docker import RUN_LABEL

pytestmark = pytest.mark.usefixtures("agentenv_home")

DATASET = Path(__file__).resolve().parents[2] / "examples" / "harbor" / "dataset"


@pytest.fixture(scope="module")
def daemon() -> None:
    require_image_mode()


def containers_of(run_id: str) -> list[str]:
    """The containers carrying the run's label (other tests' runs may have theirs at the same time)."""
    listed = subprocess.run(["docker", "ps", "--all", "--quiet", "--filter", f"label={RUN_LABEL}={run_id}"],
                            capture_output=True, text=True, check=True)
    return listed.stdout.split()


def all_containers() -> set[str]:
    listed = subprocess.run(["docker", "ps", "--all", "--quiet"], capture_output=True, text=True, check=True)
    return set(listed.stdout.split())


def container_command(container: str) -> str:
    shown = subprocess.run(["docker", "inspect", "--format", "{{json .Config.Cmd}}", container], capture_output=True,
                           text=True, check=False)
    return shown.stdout


async def run_task(name: str | Path, agent: str) -> TaskReport:
    return (await run_task_and_id(name, agent))[0]


async def run_task_and_id(name: str | Path, agent: str) -> tuple[TaskReport, str]:
    """The task run as `prefect-agentenv run` runs it (no Prefect API), with ``agent``: its report and run id."""
    result = validate_file(DATASET / name)
    assert result.ok and result.document is not None, [p.render() for p in result.problems]
    run_id = uuid.uuid4().hex
    report = await run_task_document(result.document, overrides={"a2a_agent_id": agent}, execute_in_prefect=False,
                                     publish=False, run_id=run_id)
    assert containers_of(run_id) == [], "a Harbor environment was left running"
    return report, run_id


def scores(report: TaskReport) -> dict[str, float | None]:
    return {k: v.score for k, v in report.context.metadata.verifications.items()}


async def test_the_oracle_passes_and_nop_fails_with_no_infrastructure_failure(daemon: None) -> None:
    oracle = await run_task("hello-world", "oracle")
    nop = await run_task("hello-world", "nop")

    assert oracle.error is None and scores(oracle) == {"verifier": 1.0}
    assert nop.error is None and scores(nop) == {"verifier": 0.0}
    assert [r.id for r in nop.context.metadata.verifications["verifier"].results] == ["reward"]
    assert not nop.context.metadata.verifications["verifier"].errored


async def test_every_key_of_reward_json_is_a_row_by_name_and_the_score_is_their_mean(daemon: None) -> None:
    oracle = await run_task("count-lines", "oracle")
    nop = await run_task("count-lines", "nop")

    rows = {r.id: r.score for r in oracle.context.metadata.verifications["verifier"].results}
    assert rows == {"correct": 1.0, "digits_only": 1.0} and scores(oracle) == {"verifier": 1.0}
    assert {r.id: r.score for r in nop.context.metadata.verifications["verifier"].results} == {
        "correct": 0.0, "digits_only": 0.0}


async def test_an_agent_past_its_timeout_is_stopped_and_the_verifier_still_runs(daemon: None) -> None:
    report = await run_task("slow-agent", "oracle")

    agent = report.context.prompt_responses["agent"]
    assert agent.is_timeout and "timeout_sec=3s" in (agent.error or "")
    assert scores(report) == {"verifier": 1.0}


async def test_a_separate_verifier_sees_the_declared_artifacts_and_nothing_else(daemon: None) -> None:
    oracle = await run_task("separate-verifier", "oracle")
    nop = await run_task("separate-verifier", "nop")

    assert scores(oracle) == {"verifier": 1.0}, oracle.context.metadata.verifications
    assert scores(nop) == {"verifier": 0.0}


async def test_a_multi_step_task_runs_each_step_and_stops_under_min_reward(daemon: None) -> None:
    oracle = await run_task("multi-step", "oracle")
    nop = await run_task("multi-step", "nop")

    assert scores(oracle) == {"verifier-write": 1.0, "verifier-shout": 1.0}
    assert scores(nop) == {"verifier-write": 0.0, "verifier-shout": 0.0}
    assert [r.id for r in nop.context.metadata.verifications["verifier-shout"].results] == ["stopped_early"]


async def test_compose_sidecars_run_beside_main_and_are_reached_by_their_service_names(daemon: None) -> None:
    oracle, run_id = await run_task_and_id(DATASET.parent / "sidecar-tool", "oracle")
    nop = await run_task(DATASET.parent / "sidecar-tool", "nop")

    assert scores(oracle) == {"verifier": 1.0}, oracle.context.metadata.verifications
    assert "noted: shipped" in oracle.context.prompt_responses["agent"].response, "the sidecar's environment"
    assert scores(nop) == {"verifier": 0.0}
    assert containers_of(run_id) == [], "main and its sidecar removed"


async def test_a_second_build_of_the_same_content_is_the_cached_image(daemon: None) -> None:
    source = BuildSource(DATASET / "hello-world" / "environment", DATASET / "hello-world" / "environment" / "Dockerfile")

    first = await ensure_image("hello-world", source, build_timeout=300)
    second = await ensure_image("hello-world", source, build_timeout=300)

    assert second.built is False and second.image_id == first.image_id
    assert first.tag.startswith("agentenv-harbor/hello-world:")


async def test_without_a_daemon_the_environment_fails_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    result = validate_file(DATASET / "hello-world")
    assert result.document is not None

    report = await run_task_document(result.document, execute_in_prefect=False, publish=False)

    assert {s.id: s.state for s in report.steps}["environment"] == "failed"
    assert "no docker daemon answers here" in (report.error or "") and "Traceback" not in (report.error or "")


async def test_a_build_that_fails_is_a_deploy_failure_carrying_its_log(daemon: None, tmp_path: Path) -> None:
    task = tmp_path / "broken"
    shutil.copytree(DATASET / "hello-world", task)
    (task / "environment" / "Dockerfile").write_text(
        'FROM agentenv-test/python:bookworm-1\nSHELL ["/bin/bash", "-c"]\nRUN echo the-build-log-line && exit 3\n')

    before = all_containers()
    report = await run_task(task, "oracle")

    assert not [c for c in all_containers() - before if "the-build-log-line" in container_command(c)], \
        "the failed build left its container"
    environment = next(s for s in report.steps if s.id == "environment")
    assert environment.state == "failed" and environment.error_type == "DeployError"
    assert "docker build exited" in (report.error or "") and "the-build-log-line" in (report.error or "")
    assert report.context.metadata.verifications == {}


async def test_an_environment_whose_healthcheck_never_passes_is_a_deploy_failure(daemon: None, tmp_path: Path) -> None:
    task = tmp_path / "unhealthy"
    shutil.copytree(DATASET / "hello-world", task)
    toml = task / "task.toml"
    toml.write_text(toml.read_text() + '\n[environment.healthcheck]\ncommand = "test -f /app/ready"\n'
                    "interval_sec = 0.1\nretries = 1\n")

    report = await run_task(task, "oracle")

    environment = next(s for s in report.steps if s.id == "environment")
    assert environment.state == "failed" and environment.error_type == "DeployError"
    assert "healthcheck did not pass after 2 tries" in (report.error or "")
