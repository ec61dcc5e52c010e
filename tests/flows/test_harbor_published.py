"""A published version of a Harbor benchmark: its record names each task folder by content (kept in the
artifact store), so publishing the same folders from another checkout is the same version, and the version
runs, the oracle scoring 1.0, after every checkout is gone. Needs the local docker daemon (`make docker-up`)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from image_mode import require_image_mode
from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.documents.published.snapshot import PublishedBenchmark, freeze_benchmark
from prefect_agentenv.documents.published.store import publish
from prefect_agentenv.flows.benchmark import benchmark
from prefect_agentenv.results.store.run_store import read_results

pytestmark = pytest.mark.usefixtures("prefect_harness", "agentenv_home")

DATASET = Path(__file__).resolve().parents[2] / "examples" / "harbor" / "dataset"
TASKS = ("hello-world", "count-lines")


@pytest.fixture(scope="module")
def daemon() -> None:
    require_image_mode()


def checkout(folder: Path) -> Path:
    """A benchmark file naming Harbor task folders by path, in a checkout at ``folder``."""
    for name in TASKS:
        shutil.copytree(DATASET / name, folder / "tasks" / name)
    path = folder / "bench.yaml"
    path.write_text(yaml.safe_dump({"name": "Harbor published", "slug": "harbor-published", "version": 1,
                                    "tasks": [{"id": name, "path": f"tasks/{name}"} for name in TASKS]}))
    return path


def publish_file(path: Path) -> PublishedBenchmark:
    with get_artifact_store() as store:
        return publish(store, freeze_benchmark(path, store).record).record


async def test_a_published_harbor_benchmark_names_no_checkout_and_runs_without_one(daemon: None,
                                                                                     tmp_path: Path) -> None:
    published = publish_file(checkout(tmp_path / "one"))
    again = publish_file(checkout(tmp_path / "two"))
    assert again.hash == published.hash
    assert str(tmp_path) not in published.model_dump_json()
    shutil.rmtree(tmp_path / "one")
    shutil.rmtree(tmp_path / "two")

    state = await benchmark(path="harbor-published@1", overrides={"a2a_agent_id": "oracle"}, return_state=True)
    out: Any = await state.aresult(raise_on_failure=False)

    assert isinstance(out, dict) and out["counts"]["passed"] == len(TASKS), out
    with get_artifact_store() as store:
        results = {r.task_id: r for r in read_results(store, "harbor-published", out["run_id"])}
    assert {t: results[t].score for t in TASKS} == {t: 1.0 for t in TASKS}
    assert all(results[t].snapshot and results[t].snapshot.sha256 == published.task(t).sha256  # type: ignore[union-attr]
               for t in TASKS)
