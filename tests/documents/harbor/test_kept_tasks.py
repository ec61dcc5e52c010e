"""Harbor task folders kept by content: the same folder in two checkouts is one reference and one stored
archive, a reference is unpacked from the artifact store on a machine without the checkout (under the
folder's own name, executables still executable), and a store holding other content is refused."""

from __future__ import annotations

import gzip
import os
import shutil
from pathlib import Path

import pytest

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.documents.harbor.folder import HarborTaskError, load_task_folder
from prefect_agentenv.documents.harbor.kept_tasks import (
    folder_archive,
    keep_task_folder,
    kept_tasks,
    store_key,
    task_folder,
)
from prefect_agentenv.engine.benchmark_source import load_source

pytestmark = pytest.mark.usefixtures("agentenv_home")

DATASET = Path(__file__).resolve().parents[3] / "examples" / "harbor" / "dataset"


def checkout(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name / "dataset"
    shutil.copytree(DATASET / "hello-world", folder / "hello-world")
    shutil.copytree(DATASET / "count-lines", folder / "count-lines")
    os.utime(folder / "hello-world" / "task.toml", (0, 1_000_000))  # another time: not part of the content
    return folder


def test_the_same_folder_in_two_checkouts_is_one_reference_stored_once(tmp_path: Path) -> None:
    one, two = checkout(tmp_path, "one"), checkout(tmp_path, "two")

    with get_artifact_store() as store:
        first = keep_task_folder(store, one / "hello-world")
        second = keep_task_folder(store, two / "hello-world")
        kept = store.list_objects("harbor-tasks")

    assert first == second and first.startswith("sha256:")
    assert kept == [store_key(first.removeprefix("sha256:"))]


def test_a_benchmark_of_harbor_tasks_names_no_checkout(tmp_path: Path) -> None:
    one, two = checkout(tmp_path, "one"), checkout(tmp_path, "two")

    documents = [{t.task_id: t.document.model_dump(mode="json") for t in load_source(None, str(folder)).tasks}
                 for folder in (one, two)]

    assert documents[0] == documents[1]
    assert str(tmp_path) not in str(documents[0])
    dirs = {s["task_dir"] for d in documents[0].values() for s in d["steps"]}
    assert len(dirs) == 2 and all(d.startswith("sha256:") for d in dirs)


def test_a_reference_is_unpacked_from_the_store_where_the_checkout_is_gone(tmp_path: Path) -> None:
    folder = checkout(tmp_path, "gone")
    with get_artifact_store() as store:
        (task,) = kept_tasks(store, [t for t in load_source(None, str(folder)).tasks if t.task_id == "hello-world"])
    shutil.rmtree(tmp_path / "gone")

    ref = task.document.steps[0].task_dir  # type: ignore[attr-defined]
    unpacked = task_folder(ref)

    assert unpacked.name == "hello-world" and load_task_folder(unpacked).slug == "hello-world"
    assert os.access(unpacked / "solution" / "solve.sh", os.X_OK)
    assert task_folder(ref) == unpacked  # once per machine


def test_a_store_holding_other_content_under_a_reference_is_refused(tmp_path: Path) -> None:
    folder = checkout(tmp_path, "tampered")
    with get_artifact_store() as store:
        ref = keep_task_folder(store, folder / "hello-world")
        store.put_object(store_key(ref.removeprefix("sha256:")), gzip.compress(folder_archive(folder / "count-lines")))

    with pytest.raises(HarborTaskError, match="other content"):
        task_folder(ref)
    with pytest.raises(HarborTaskError, match="not a kept task folder"):
        task_folder("sha256:nothex")
