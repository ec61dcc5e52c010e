"""Harbor task folders read as task documents: the examples load, Harbor's older spellings are read, and a bad
task.toml is refused with one problem per field, naming the file (exit 2 at the command line)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from prefect_agentenv.documents import validate_any_file, validate_file
from prefect_agentenv.documents.benchmarks.validation import BenchmarkValidationResult
from prefect_agentenv.documents.harbor.compile import compile_task, dataset_benchmark_data
from prefect_agentenv.documents.harbor.config import TaskConfig, size_mb
from prefect_agentenv.documents.harbor.folder import HarborTaskError, load_task_folder

HARBOR = Path(__file__).resolve().parents[3] / "examples" / "harbor"
DATASET = HARBOR / "dataset"
TASKS = sorted(p.name for p in DATASET.iterdir())


@pytest.mark.parametrize("name", TASKS)
def test_each_example_task_is_a_valid_task_document(name: str) -> None:
    result = validate_file(DATASET / name)

    assert result.ok, [p.render() for p in result.problems]
    assert result.document is not None
    assert [s.type for s in result.document.steps][:3] == ["harbor_environment", "harbor_agent", "harbor_verifier"]


def test_a_multi_step_task_compiles_an_agent_and_a_verifier_per_step_each_after_the_last() -> None:
    document = compile_task(load_task_folder(DATASET / "multi-step"))

    steps = {s["id"]: s for s in document["steps"]}
    assert list(steps) == ["environment", "agent-write", "verifier-write", "agent-shout", "verifier-shout"]
    assert steps["agent-shout"]["depends_on"] == ["verifier-write"]
    assert steps["agent-shout"]["after_verifier"] == "verifier-write"
    assert {s["weight"] for s in document["steps"] if s["type"] == "harbor_verifier"} == {1.0}


def test_harbors_older_spellings_are_read_as_the_current_ones() -> None:
    config = TaskConfig.model_validate({"version": "1.0", "environment": {"memory": "2G", "storage": "10G",
                                                                         "allow_internet": False}})

    assert config.schema_version == "1.0"
    assert (config.environment.memory_mb, config.environment.storage_mb) == (2048, 10240)
    assert config.environment.network_mode == "no-network"
    assert size_mb("512M") == 512 and size_mb("1.5GB") == 1536


def test_a_bad_task_toml_lists_every_problem_by_file_and_field() -> None:
    with pytest.raises(HarborTaskError) as raised:
        load_task_folder(HARBOR / "bad-task")

    toml = str(HARBOR / "bad-task" / "task.toml")
    paths = [p.path for p in raised.value.problems]
    assert paths == [f"{toml}:environment.gpus", f"{toml}:environment.os", f"{toml}:agent.timeout_sec",
                     f"{toml}:verifier.environment_mode", f"{toml}:environment.cpus"]
    assert "GPU" in raised.value.problems[0].message and "Windows" in raised.value.problems[1].message


def test_unsupported_settings_are_refused_by_name_not_ignored() -> None:
    result = validate_file(HARBOR / "bad-task-unsupported")

    assert [p.path.rsplit(":", 1)[1] for p in result.problems] == ["environment.gpus", "environment.os"]
    assert all(p.message.startswith("not supported:") for p in result.problems)


def test_an_mcp_server_with_nothing_to_reach_is_read_and_the_reader_is_told_it_is_not_given(tmp_path: Path) -> None:
    task = tmp_path / "with-tools"
    shutil.copytree(HARBOR / "mcp-tool", task)
    toml = task / "task.toml"
    toml.write_text(toml.read_text() + '\n[[environment.mcp_servers]]\nname = "files"\ntransport = "sse"\n')

    result = validate_file(task)

    assert result.ok and result.document is not None
    (notice,) = [w for w in result.warnings if "mcp_servers" in w.message]
    assert notice.severity == "notice" and notice.step_id == "environment"
    assert "] files: read, not given to the agent: a stdio server needs a command, and a server at a URL its url" \
        in notice.message, "the stdio one is given"
    (environment,) = [s for s in result.document.steps if s.id == "environment"]
    assert environment.given_mcp_servers == ["stamper"]  # type: ignore[attr-defined]
    assert not [w for w in validate_file(HARBOR / "mcp-tool").warnings if "mcp_servers" in w.message]
    assert not [w for w in validate_file(DATASET / "hello-world").warnings if "mcp_servers" in w.message]


def test_settings_read_and_not_applied_are_each_named_with_why(tmp_path: Path) -> None:
    task = tmp_path / "with-storage"
    shutil.copytree(DATASET / "hello-world", task)
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace("[environment]", '[environment]\nstorage_mb = 10240\nskills_dir = "/skills"'))

    result = validate_file(task)

    assert result.ok, [p.render() for p in result.problems]
    said = [w.message for w in result.warnings if w.message.startswith("read, not applied:")]
    assert said == ["read, not applied: [environment].storage_mb = 10240: not enforced (a container on the local "
                    "daemon's overlay2 storage has no disk quota; Harbor's own docker environment does not enforce "
                    "it either)", "read, not applied: [environment].skills_dir = '/skills': not given to the agent"]
    assert not [w for w in validate_file(DATASET / "hello-world").warnings if "not applied" in w.message]


def test_a_compose_sidecar_the_run_cannot_start_is_a_problem_at_validate_naming_the_service(tmp_path: Path) -> None:
    task = tmp_path / "with-volume"
    shutil.copytree(HARBOR / "sidecar-tool", task)
    compose = task / "environment" / "docker-compose.yaml"
    compose.write_text(compose.read_text() + "    volumes:\n      - notes:/data\n")

    result = validate_file(task)

    (problem,) = result.problems
    assert problem.path == str(compose)
    assert problem.message.startswith("service 'notes': volumes not supported")
    assert validate_file(HARBOR / "sidecar-tool").ok


def test_a_dataset_folder_is_a_benchmark_of_its_task_folders() -> None:
    data = dataset_benchmark_data(DATASET)
    result = validate_any_file(DATASET)

    assert [t["id"] for t in data["tasks"]] == TASKS
    assert isinstance(result, BenchmarkValidationResult) and result.ok, [p.render() for p in result.problems]
    assert sorted(t.base_id for t in result.tasks) == TASKS


def test_a_folder_that_is_neither_a_task_nor_a_dataset_says_so(tmp_path: Path) -> None:
    result = validate_file(tmp_path)

    assert [p.message for p in result.problems] == [f"{tmp_path} is a folder with no task.toml and no task folders in it"]


def test_validate_exits_2_with_one_line_per_problem() -> None:
    done = subprocess.run([sys.executable, "-m", "prefect_agentenv.cli", "validate", str(HARBOR / "bad-task"),
                           str(DATASET / "hello-world")], capture_output=True, text=True, timeout=120)

    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"{HARBOR / 'bad-task'}: 5 problem(s)"
    assert all("bad-task/task.toml:" in line for line in lines[1:6])
    assert lines[6] == f"{DATASET / 'hello-world'}: ok (3 steps)"
    assert "Traceback" not in done.stderr


def test_a_dataset_given_as_the_current_folder_names_its_tasks_from_there(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(DATASET)

    result = validate_any_file(Path("."))

    assert isinstance(result, BenchmarkValidationResult) and result.ok, [p.render() for p in result.problems]
    assert sorted(t.base_id for t in result.tasks) == TASKS


def test_a_benchmark_document_names_a_task_folder_as_its_path(tmp_path: Path) -> None:
    bench = tmp_path / "bench.yaml"
    bench.write_text(f"name: Harbor pick\nslug: harbor-pick\ntasks:\n  - {{id: hello, path: {DATASET / 'hello-world'}}}\n"
                     f"  - {{id: steps, path: {os.path.relpath(DATASET / 'multi-step', tmp_path)}}}\n")

    result = validate_any_file(bench)

    assert isinstance(result, BenchmarkValidationResult)
    assert [p.message for p in result.problems] == [f"the task path {str(DATASET / 'hello-world')!r} is absolute"]
    bench.write_text(bench.read_text().replace(str(DATASET / "hello-world"),
                                               os.path.relpath(DATASET / "hello-world", tmp_path)))
    result = validate_any_file(bench)
    assert isinstance(result, BenchmarkValidationResult) and result.ok, [p.render() for p in result.problems]
    assert [len(t.document.steps) for t in result.tasks] == [3, 5]


def test_the_final_strategy_weighs_only_the_last_steps_verifier(tmp_path: Path) -> None:
    task = tmp_path / "final"
    shutil.copytree(DATASET / "multi-step", task)
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace('multi_step_reward_strategy = "mean"', 'multi_step_reward_strategy = "final"'))

    document = compile_task(load_task_folder(task))

    assert {s["id"]: s["weight"] for s in document["steps"] if s["type"] == "harbor_verifier"} == {
        "verifier-write": 0.0, "verifier-shout": 1.0}


def test_a_changed_file_of_the_task_changes_the_compiled_document(tmp_path: Path) -> None:
    task = tmp_path / "hello"
    shutil.copytree(DATASET / "hello-world", task)
    before = compile_task(load_task_folder(task))
    (task / "environment" / "Dockerfile").write_text((task / "environment" / "Dockerfile").read_text() + "ENV X=1\n")
    (task / "tests" / "test_state.py").write_text("raise SystemExit(0)\n")

    after = compile_task(load_task_folder(task))

    changed = {k for b, a in zip(before["steps"], after["steps"], strict=True) for k in b if b[k] != a[k]}
    assert changed == {"environment_sha256", "tests_sha256"}
