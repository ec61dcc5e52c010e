"""Runs of a published benchmark version: the frozen copy runs whatever the files say now, and every
result, the runs index and the summary say which version and hash produced them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from prefect.client.orchestration import get_client

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.deployments import build_deployments
from prefect_agentenv.documents.published.snapshot import PublishedBenchmark, freeze_benchmark
from prefect_agentenv.documents.published.store import publish
from prefect_agentenv.flows.benchmark import benchmark
from prefect_agentenv.results.store.run_store import list_runs, read_results

pytestmark = pytest.mark.usefixtures("prefect_harness", "agentenv_home")


def write_bench(folder: Path, *, score: float = 1.0, version: int = 1) -> Path:
    """A task file graded ``score`` and an inline task graded 0.5."""
    (folder / "graded.json").write_text(json.dumps({"id": "graded", "steps": [
        {"id": "work", "type": "test_noop", "depends_on": []}, {"id": "grade", "type": "test_score", "score": score}]}))
    path = folder / "bench.yaml"
    path.write_text(yaml.safe_dump({"name": "Frozen", "slug": "frozen-bench", "version": version, "concurrency": 2,
                                    "tasks": [{"id": "graded", "path": "graded.json"},
                                              {"id": "steady", "steps": [{"id": "grade", "type": "test_score",
                                                                          "score": 0.5}]}]}))
    return path


def publish_file(path: Path) -> PublishedBenchmark:
    with get_artifact_store() as store:
        return publish(store, freeze_benchmark(path, store).record).record


async def run(**params: Any) -> tuple[Any, Any]:
    state = await benchmark(return_state=True, **params)
    return state, await state.aresult(raise_on_failure=False)


def results_of(run_id: str) -> dict[str, Any]:
    with get_artifact_store() as store:
        return {r.task_id: r for r in read_results(store, "frozen-bench", run_id)}


async def test_a_published_version_runs_its_frozen_tasks_after_the_files_changed(tmp_path: Path) -> None:
    path = write_bench(tmp_path)
    published = publish_file(path)
    write_bench(tmp_path, score=0.0)  # edited after publishing: version 1 must not see it
    state, out = await run(benchmark="frozen-bench@1", report_dir=str(tmp_path / "out"))
    assert state.is_completed(), state.message
    results = results_of(out["run_id"])
    assert results["graded"].outcome.value == "PASSED" and results["graded"].score == 1.0
    assert results["graded"].snapshot and results["graded"].snapshot.sha256 == published.task("graded").sha256
    assert {r.published for r in results.values()} == {published.ref}
    assert out["published"] == {"slug": "frozen-bench", "version": "1", "hash": published.hash}
    assert out["markdown"].split("\n\n")[1].startswith(  # under the title
        f"**Published version** `frozen-bench@1` (sha256 `{published.hash[:12]}…`)")
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["published"]["hash"] == published.hash

    _, files = await run(path=str(path))  # the files as they are now: the edit runs, nothing is published
    now = results_of(files["run_id"])
    assert now["graded"].score == 0.0 and now["graded"].published is None and files["published"] is None
    assert "ran `frozen-bench@1`: its tasks may differ" in files["markdown"]
    with get_artifact_store() as store:
        index = {entry.run_id: entry for entry in list_runs(store, "frozen-bench")}
    assert index[out["run_id"]].published == published.ref and index[files["run_id"]].published is None


async def test_latest_runs_the_newest_published_version(tmp_path: Path) -> None:
    publish_file(write_bench(tmp_path))
    second = publish_file(write_bench(tmp_path, score=0.25, version=2))
    state, out = await run(path="frozen-bench@latest")  # the path parameter takes a version too
    assert state.is_completed(), state.message
    assert out["published"]["version"] == "2" and results_of(out["run_id"])["graded"].score == 0.25
    async with get_client() as client:
        flow_run = await client.read_flow_run(state.state_details.flow_run_id)
    assert flow_run.name == "frozen-bench@latest"
    assert results_of(out["run_id"])["graded"].snapshot.sha256 == second.task("graded").sha256  # type: ignore[union-attr]


async def test_a_pinned_artifact_is_loaded_even_after_a_newer_version_is_published(tmp_path: Path) -> None:
    def mailbox(*ids: str) -> bytes:
        return json.dumps({"emails": [{"id": i, "from": "a@x.example", "to": ["b@x.example"], "subject": i,
                                       "body": "."} for i in ids]}).encode()

    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump({"name": "Pinned", "slug": "pinned-bench", "tasks": [{"id": "mail", "steps": [
        {"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": []},
        {"id": "inbox", "type": "load_artifact", "env_id": "email", "artifact_id": "pinned-inbox"},
        {"id": "count", "type": "env_state_verifier", "env_id": "email",
         "assertions": [{"assert": "record_count", "id": "one", "resource": "emails", "equals": 1}]}]}]}))
    with get_artifact_store() as store:
        store.publish_environment("pinned-inbox", "email", "inbox.json", mailbox("m1"))
        publish(store, freeze_benchmark(path, store).record)
        store.publish_environment("pinned-inbox", "email", "inbox.json", mailbox("m1", "m2"))
    state, out = await run(benchmark="pinned-bench@1")
    assert state.is_completed(), state.message
    assert out["counts"]["passed"] == 1, out["markdown"]  # one email: version 1 of the inbox
    _, files = await run(path=str(path))
    assert files["counts"]["below_one"] == 1, files["markdown"]  # the files load the latest: two emails


async def test_a_run_is_resumed_only_from_the_source_it_started_from(tmp_path: Path) -> None:
    path = write_bench(tmp_path)
    publish_file(path)
    _, first = await run(path=str(path), run_id="started-from-files")
    assert first["counts"]["total"] == 2
    state, _ = await run(benchmark="frozen-bench@1", run_id="started-from-files")
    assert state.is_failed()
    assert "started from the benchmark files, not frozen-bench@1" in str(state.message)


async def test_an_unknown_version_fails_the_run_naming_the_published_ones(tmp_path: Path) -> None:
    publish_file(write_bench(tmp_path))
    state, _ = await run(benchmark="frozen-bench@9")
    assert state.is_failed()
    assert "frozen-bench@9 is not published" in str(state.message) and "published versions: 1" in str(state.message)


def test_the_bench_command_runs_a_published_version(tmp_path: Path, agentenv_home: Path) -> None:
    from prefect.settings import PREFECT_API_URL

    path = write_bench(tmp_path)
    published = publish_file(path)
    (tmp_path / "graded.json").unlink()  # the files are not read at all
    env = {**os.environ, "PREFECT_API_URL": str(PREFECT_API_URL.value()), "PREFECT_AGENTENV_HOME": str(agentenv_home),
           "COLUMNS": "200"}
    proc = subprocess.run([sys.executable, "-m", "prefect_agentenv.cli", "bench", "frozen-bench@1", "--report-dir",
                           str(tmp_path / "out")], env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "benchmark frozen-bench@1  run" in proc.stdout and "mean score 0.750" in proc.stdout
    assert "prefect-agentenv bench frozen-bench@1 --resume" in proc.stdout
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["published"] == {"slug": "frozen-bench", "version": "1", "hash": published.hash}


def test_the_nightly_deployment_takes_a_published_version() -> None:
    (nightly,) = [d for d in build_deployments("frozen-bench@3", cron=None) if d.name == "nightly"]
    assert nightly.parameters == {"benchmark": "frozen-bench@3"}
    assert "`frozen-bench@3` (a published version)" in (nightly.description or "")
