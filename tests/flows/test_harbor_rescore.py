"""A Harbor dataset's run rescored for real: each task run kept the workdir its agent left (the separate
verifier's artifacts), and a rescore runs tests/test.sh again in a fresh container of the task's image with
it restored. The run's frozen documents (their task folders kept by content) give the same scores even
after the checkout's tests change; the changed tests, given as current documents, give others. Needs the
local docker daemon (`make docker-up`)."""

from __future__ import annotations

import gzip
import io
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest

from image_mode import require_image_mode
from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.engine.submission_record import read_submission
from prefect_agentenv.flows.benchmark import benchmark
from prefect_agentenv.flows.rescoring import RescoreResult, load_documents, rescore_run
from prefect_agentenv.results.store.run_store import read_results
from prefect_agentenv.runtime.launch.docker import RUN_LABEL

pytestmark = pytest.mark.usefixtures("prefect_harness", "agentenv_home")

DATASET = Path(__file__).resolve().parents[2] / "examples" / "harbor" / "dataset"
TASKS = ("hello-world", "separate-verifier", "multi-step")


@pytest.fixture(scope="module")
def daemon() -> None:
    require_image_mode()


def scoring_containers() -> set[str]:
    """Harbor containers of scoring runs (a rescore's): other tests' runs may have theirs meanwhile."""
    listed = subprocess.run(["docker", "ps", "--all", "--format", f'{{{{.Names}}}} {{{{.Label "{RUN_LABEL}"}}}}'],
                            capture_output=True, text=True, check=True)
    return {name for name, _, run in (line.partition(" ") for line in listed.stdout.splitlines())
            if name.startswith("agentenv-harbor") and "-scoring-" in run}


async def bench(dataset: Path, agent: str) -> dict[str, Any]:
    state = await benchmark(path=str(dataset), overrides={"a2a_agent_id": agent}, concurrency=2, return_state=True)
    out = await state.aresult(raise_on_failure=False)
    assert isinstance(out, dict), state.message
    return out


async def rescore(run_id: str, benchmark_path: Path | None = None) -> RescoreResult:
    with get_artifact_store() as store:
        return await rescore_run(store, f"rescorable/{run_id}",
                                 load_documents(None, str(benchmark_path) if benchmark_path else None))


def after(result: RescoreResult) -> dict[str, float | None]:
    return {r.task_id: r.after for r in result.rescored}


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    folder = tmp_path / "rescorable"
    for name in TASKS:
        shutil.copytree(DATASET / name, folder / name)
    return folder


async def test_a_rescore_runs_the_tests_again_on_the_kept_workdir(daemon: None, dataset: Path) -> None:
    before = scoring_containers()
    oracle = await bench(dataset, "oracle")
    assert oracle["counts"]["passed"] == len(TASKS), oracle["headline"]

    with get_artifact_store() as store:
        results = {r.task_id: r for r in read_results(store, "rescorable", oracle["run_id"])}
        kept = read_submission(store, results["hello-world"].flow_run_id or "")
    archive = kept.submission().environments["verifier"]["/app"]
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        assert tar.extractfile("app/hello.txt").read() == b"Hello, world!\n"  # type: ignore[union-attr]
    key = kept.environments["verifier"]["/app"]
    with get_artifact_store() as store:
        assert gzip.decompress(store.get_object(key)) == archive

    same = await rescore(oracle["run_id"])
    assert same.missing == [] and after(same) == {t: 1.0 for t in TASKS}, same.markdown()

    test = dataset / "hello-world" / "tests" / "test_state.py"
    test.write_text(test.read_text().replace("Hello, world!", "Goodbye, world!"))
    frozen = await rescore(oracle["run_id"])  # the run's own tests, kept with its snapshot
    assert frozen.missing == [] and after(frozen) == {t: 1.0 for t in TASKS}, frozen.markdown()

    current = await rescore(oracle["run_id"], dataset)
    assert current.missing == [] and after(current) == {"hello-world": 0.0, "separate-verifier": 1.0,
                                                        "multi-step": 1.0}, current.markdown()
    assert scoring_containers() == before, "a rescore left a container"


async def test_a_rescore_of_nop_scores_the_untouched_workdir_zero(daemon: None, dataset: Path) -> None:
    nop = await bench(dataset, "nop")
    assert nop["counts"]["passed"] == 0 and nop["counts"]["failed"] == 0, nop["headline"]

    again = await rescore(nop["run_id"])
    with get_artifact_store() as store:  # one task folder as the current document: only its task runs
        one = await rescore_run(store, f"rescorable/{nop['run_id']}",
                                load_documents(str(dataset / "hello-world"), None))

    assert again.missing == [] and after(again) == {t: 0.0 for t in TASKS}, again.markdown()
    assert one.missing == [] and after(one) == {"hello-world": 0.0} and one.documents == "task", one.markdown()
