"""The deployments end to end: a real `prefect server start`, `prefect-agentenv serve`, and runs
triggered with `prefect deployment run` from the CLI, read back through the Prefect client (a Harbor
dataset too, on the local docker daemon, skipped without one)."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from prefect.client.orchestration import PrefectClient
from prefect.client.schemas.filters import (
    ArtifactFilter,
    ArtifactFilterFlowRunId,
    FlowRunFilter,
    FlowRunFilterDeploymentId,
    FlowRunFilterParentFlowRunId,
)

from image_mode import require_image_mode
from prefect_reads import settled_task_runs
from servers import stop_process

from .deployment_helpers import BIN, REPO, prefect_cli


@pytest.fixture(scope="module")
def served(server_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """`prefect-agentenv serve` with a one-task benchmark, its artifacts published."""
    folder = tmp_path_factory.mktemp("bench")
    bench = folder / "bench.yaml"
    (folder / "roundtrip.json").write_text((REPO / "examples" / "env-roundtrip.json").read_text())
    bench.write_text(yaml.safe_dump({"name": "Served smoke", "slug": "served-smoke", "tasks": [
        {"id": "roundtrip", "path": "roundtrip.json"}]}))
    subprocess.run([sys.executable, "-c", "from prefect_agentenv.demo import publish_example_artifacts as p; "
                    f"p(__import__('pathlib').Path({str(REPO / 'examples')!r}))"], env=server_env, check=True)
    log = (folder / "serve.log").open("wb")
    proc = subprocess.Popen([str(BIN / "prefect-agentenv"), "serve", "--benchmark", str(bench), "--no-schedule"],
                            env=server_env, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            assert proc.poll() is None, (folder / "serve.log").read_text()[-3000:]
            listed = subprocess.run([str(BIN / "prefect"), "deployment", "ls"], env=server_env,
                                    capture_output=True, text=True)
            if "nightly" in listed.stdout and "agent-task" in listed.stdout:
                break
            time.sleep(1)
        else:
            pytest.fail("the deployments were not served")
        yield {**server_env, "BENCH": str(bench)}
    finally:
        stop_process(proc, timeout=20)
        log.close()


async def flow_run_named(client: PrefectClient, deployment: str) -> list:  # type: ignore[type-arg]
    dep = await client.read_deployment_by_name(deployment)
    return await client.read_flow_runs(flow_run_filter=FlowRunFilter(deployment_id=FlowRunFilterDeploymentId(any_=[dep.id])))


def test_the_nightly_benchmark_runs_when_triggered_from_the_cli(served: dict[str, str]) -> None:
    run = prefect_cli(served, "deployment", "run", "benchmark/nightly", "--param", f"path={served['BENCH']}",
                      "--watch", "--watch-timeout", "240")
    assert run.returncode == 0, run.stdout + run.stderr

    async def check() -> None:
        async with PrefectClient(served["PREFECT_API_URL"]) as client:
            (bench_run,) = await flow_run_named(client, "benchmark/nightly")
            assert bench_run.state and bench_run.state.is_completed(), bench_run.state
            children = await client.read_flow_runs(
                flow_run_filter=FlowRunFilter(parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[bench_run.id])))
            assert [c.name for c in children] == ["roundtrip · epoch 0"]
            assert "benchmark:served-smoke" in children[0].tags
            task_runs = await settled_task_runs([children[0].id], client, at_least=5)
            assert {t.name for t in task_runs} >= {"email", "inbox", "snapshot", "outcome", "state"}
            artifacts = await client.read_artifacts(
                artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[bench_run.id])))
            summary = next(a for a in artifacts if a.type == "markdown" and a.key.endswith("-summary"))
            assert "Mean score" in str(summary.data) and "roundtrip" in str(summary.data)
            assert "progress" in {a.type for a in artifacts}

    asyncio.run(check())


def test_a_task_document_runs_through_the_agent_task_deployment_with_params_from_stdin(
        served: dict[str, str]) -> None:
    task = json.loads((REPO / "examples" / "env-roundtrip.json").read_text())
    run = prefect_cli(served, "deployment", "run", "agent-task/agent-task", "--params", "-", "--watch",
                      "--watch-timeout", "240", stdin=json.dumps({"task": task}))
    assert run.returncode == 0, run.stdout + run.stderr

    async def check() -> None:
        async with PrefectClient(served["PREFECT_API_URL"]) as client:
            runs = await flow_run_named(client, "agent-task/agent-task")
            direct = [r for r in runs if r.parent_task_run_id is None]
            assert direct and direct[-1].state and direct[-1].state.is_completed()
            assert direct[-1].name == "env-roundtrip"
            artifacts = await client.read_artifacts(
                artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[direct[-1].id])))
            assert {a.key for a in artifacts} >= {"agentenv-env-roundtrip-summary",
                                                  "agentenv-env-roundtrip-verifications"}

    asyncio.run(check())


def test_a_fleet_benchmark_dispatches_each_task_to_the_agent_task_deployment(served: dict[str, str]) -> None:
    run = prefect_cli(served, "deployment", "run", "benchmark/nightly", "--param", f"path={served['BENCH']}",
                      "--param", "dispatch=deployment", "--watch", "--watch-timeout", "240")
    assert run.returncode == 0, run.stdout + run.stderr

    async def check() -> None:
        async with PrefectClient(served["PREFECT_API_URL"]) as client:
            agent_dep = await client.read_deployment_by_name("agent-task/agent-task")
            bench_runs = await flow_run_named(client, "benchmark/nightly")
            latest = max(bench_runs, key=lambda r: r.created or 0)
            assert latest.state and latest.state.is_completed(), latest.state
            children = await client.read_flow_runs(
                flow_run_filter=FlowRunFilter(parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[latest.id])))
            assert len(children) == 1 and children[0].deployment_id == agent_dep.id
            assert children[0].state and children[0].state.is_completed()
            artifacts = await client.read_artifacts(
                artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[latest.id])))
            summary = next(a for a in artifacts if a.type == "markdown" and a.key.endswith("-summary"))
            assert "PASSED | 1" in str(summary.data)

    asyncio.run(check())


def test_the_bench_command_shows_progress_and_a_summary(served: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = subprocess.run([str(BIN / "prefect-agentenv"), "bench", served["BENCH"], "--report-dir", str(out)],
                          env=served, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "roundtrip" in proc.stdout and "mean score 1.000" in proc.stdout
    assert (out / "summary.md").exists() and "--resume" in proc.stdout


@pytest.mark.parametrize("dispatch", ["subflow", "deployment"])
def test_a_harbor_dataset_runs_through_the_nightly_deployment_the_oracle_scoring_one(
        served: dict[str, str], tmp_path: Path, dispatch: str) -> None:
    require_image_mode()
    dataset = tmp_path / "nightly-harbor"
    for name in ("hello-world", "count-lines"):
        shutil.copytree(REPO / "examples" / "harbor" / "dataset" / name, dataset / name)
    run = prefect_cli(served, "deployment", "run", "benchmark/nightly", "--param", f"path={dataset}",
                      "--param", f"dispatch={dispatch}", "--watch", "--watch-timeout", "280")
    assert run.returncode == 0, run.stdout + run.stderr

    async def check() -> None:
        async with PrefectClient(served["PREFECT_API_URL"]) as client:
            latest = max(await flow_run_named(client, "benchmark/nightly"), key=lambda r: r.created or 0)
            assert latest.state and latest.state.is_completed(), latest.state
            children = await client.read_flow_runs(
                flow_run_filter=FlowRunFilter(parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[latest.id])))
            assert sorted(c.name.split(" · ")[0] for c in children) == ["count-lines", "hello-world"]
            if dispatch == "deployment":
                agent_dep = await client.read_deployment_by_name("agent-task/agent-task")
                assert {c.deployment_id for c in children} == {agent_dep.id}
            task_runs = await settled_task_runs([c.id for c in children], client, at_least=6)
            assert {t.name for t in task_runs} >= {"environment", "agent", "verifier"}
            artifacts = await client.read_artifacts(
                artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[latest.id])))
            summary = str(next(a for a in artifacts if a.type == "markdown" and a.key.endswith("-summary")).data)
            assert "PASSED | 2" in summary and "Mean score" in summary, summary

    asyncio.run(check())
