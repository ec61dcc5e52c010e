"""A Harbor dataset run as a benchmark, unchanged: the oracle passes every task, nop none without an
infrastructure failure, a second run builds no image (the cache holds them by content), and a rescore
of the oracle's run (its tests run again on each kept workdir) scores every task 1.0 again. Needs the
local docker daemon (`make docker-up`); skipped with the reason without one."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from image_mode import require_image_mode
from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.flows.benchmark import benchmark
from prefect_agentenv.flows.rescoring import load_documents, rescore_run
from prefect_agentenv.results.store.run_store import read_results
from prefect_agentenv.runtime.harbor.images import CACHE_LABEL
from prefect_agentenv.runtime.launch.docker import RUN_LABEL

pytestmark = pytest.mark.usefixtures("prefect_harness", "agentenv_home")

DATASET = Path(__file__).resolve().parents[2] / "examples" / "harbor" / "dataset"


def cached_images() -> dict[str, str]:
    """The cached images of the dataset's tasks (other tests may build their own meanwhile), by tag."""
    listed = subprocess.run(["docker", "images", "--filter", f"label={CACHE_LABEL}", "--format",
                             "{{.Repository}}:{{.Tag}} {{.ID}} {{.CreatedAt}}"], capture_output=True, text=True,
                            check=True)
    names = {f"agentenv-harbor/{p.name}" for p in DATASET.iterdir()} | {f"agentenv-harbor/{p.name}-verifier"
                                                                         for p in DATASET.iterdir()}
    return {tag: rest for tag, _, rest in (line.partition(" ") for line in listed.stdout.splitlines())
            if tag.split(":")[0] in names}


def containers_of(run_ids: list[str]) -> list[str]:
    """The containers carrying one of the task runs' labels (other tests' runs may have theirs meanwhile)."""
    found = []
    for run_id in run_ids:
        listed = subprocess.run(["docker", "ps", "--all", "--quiet", "--filter", f"label={RUN_LABEL}={run_id}"],
                                capture_output=True, text=True, check=True)
        found += listed.stdout.split()
    return found


def task_run_ids(out: dict[str, Any]) -> list[str]:
    with get_artifact_store() as store:
        results = read_results(store, "dataset", out["run_id"])
    return [r.flow_run_id for r in results if r.flow_run_id]


@pytest.fixture(scope="module")
def daemon() -> None:
    require_image_mode()


async def bench(agent: str) -> dict[str, Any]:
    state = await benchmark(path=str(DATASET), overrides={"a2a_agent_id": agent}, concurrency=2, return_state=True)
    out = await state.aresult(raise_on_failure=False)
    assert isinstance(out, dict), state.message
    return out


async def test_the_oracle_passes_every_task_nop_none_and_the_rerun_builds_nothing(daemon: None) -> None:
    oracle = await bench("oracle")
    images = cached_images()
    nop = await bench("nop")

    tasks = len([p for p in DATASET.iterdir() if (p / "task.toml").is_file()])
    assert oracle["counts"]["passed"] == oracle["counts"]["total"] == tasks, oracle["headline"]
    assert nop["counts"]["passed"] == 0 and nop["counts"]["below_one"] == tasks, nop["headline"]
    assert nop["counts"]["failed"] == 0 and nop["counts"]["unscored"] == 0
    assert cached_images() == images, "the second benchmark built an image again"
    ran = task_run_ids(oracle) + task_run_ids(nop)
    assert len(ran) == 2 * tasks and containers_of(ran) == []

    with get_artifact_store() as store:
        rescored = await rescore_run(store, f"dataset/{oracle['run_id']}", load_documents(None, None))
    assert rescored.missing == [] and len(rescored.rescored) == tasks, rescored.markdown()
    assert all(r.before == r.after == 1.0 for r in rescored.rescored), rescored.markdown()
