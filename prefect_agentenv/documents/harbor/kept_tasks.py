"""Harbor task folders kept by content, so what a run stores or a version publishes names no checkout.

A task document compiled from a folder names the folder where it is (``task_dir``: an absolute path),
which is right for ``validate`` and ``run DIR``. A benchmark run's frozen snapshots and a published
version must not depend on where the checkout was: there, each task folder is kept in the artifact
store as one tar archive (``harbor-tasks/<sha256>.tar.gz``: the folder under its own name, its files
in order, without owners or times) and ``task_dir`` becomes ``sha256:<hex>``, the archive's hash. The
same folder in two checkouts is the same reference, so the same snapshot hash and the same published
content. At run time a reference is unpacked once per machine into ``<home>/harbor-tasks/<hex>/<name>``
from the store (checked against its hash); every Harbor step reads the folder through :func:`task_folder`.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import shutil
import tarfile
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from prefect_agentenv.documents.harbor.folder import HarborTaskError
from prefect_agentenv.documents.problems import Problem

if TYPE_CHECKING:
    from prefect_agentenv.artifacts import ArtifactBackend
    from prefect_agentenv.documents.compile import ExpandedTask

REF_PREFIX = "sha256:"
STEP_TYPES = ("harbor_environment", "harbor_agent", "harbor_verifier")


def is_kept_ref(task_dir: str) -> bool:
    return task_dir.startswith(REF_PREFIX)


def store_key(digest: str) -> str:
    return f"harbor-tasks/{digest}.tar.gz"


def folder_archive(folder: Path) -> bytes:
    """The folder's files as one tar under the folder's name, the same bytes wherever the folder is:
    names in order, no owners, no times, modes reduced to executable or not."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            data = path.read_bytes()
            info = tarfile.TarInfo(f"{folder.name}/{path.relative_to(folder).as_posix()}")
            info.size, info.mtime = len(data), 0
            info.mode = 0o755 if os.access(path, os.X_OK) else 0o644
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def keep_task_folder(store: ArtifactBackend, folder: Path, known: set[str] | None = None) -> str:
    """Keep ``folder`` in ``store`` (unless ``known``, the store's keys, holds it) and return its
    reference ``sha256:<hex>``."""
    archive = folder_archive(folder.resolve())
    digest = hashlib.sha256(archive).hexdigest()
    key = store_key(digest)
    if key not in (known if known is not None else set(store.list_objects("harbor-tasks"))):
        store.put_object(key, gzip.compress(archive, mtime=0))
    return REF_PREFIX + digest


def kept_tasks(store: ArtifactBackend, tasks: Iterable[ExpandedTask]) -> list[ExpandedTask]:
    """``tasks`` with every Harbor step's folder path replaced by the folder's kept reference."""
    refs: dict[str, str] = {}
    known: set[str] | None = None
    out = []
    for task in tasks:
        steps = []
        for step in task.document.steps:
            task_dir = getattr(step, "task_dir", None)
            if step.type in STEP_TYPES and isinstance(task_dir, str) and not is_kept_ref(task_dir):
                if task_dir not in refs:
                    known = set(store.list_objects("harbor-tasks")) if known is None else known
                    refs[task_dir] = keep_task_folder(store, Path(task_dir), known)
                step = step.model_copy(update={"task_dir": refs[task_dir]})
            steps.append(step)
        out.append(task.model_copy(update={"document": task.document.model_copy(update={"steps": steps})}))
    return out


def has_harbor_tasks(tasks: Iterable[ExpandedTask]) -> bool:
    return any(step.type in STEP_TYPES for task in tasks for step in task.document.steps)


def task_folder(task_dir: str) -> Path:
    """The folder a step's ``task_dir`` names: a path as it is, a kept reference unpacked (once) from
    the artifact store into ``<home>/harbor-tasks``.

    Raises:
        HarborTaskError: the store does not hold the reference, or holds other content under it.
    """
    if not is_kept_ref(task_dir):
        return Path(task_dir)
    from prefect_agentenv.settings import get_settings

    digest = task_dir.removeprefix(REF_PREFIX)
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise HarborTaskError([Problem(f"task_dir {task_dir!r} is not a kept task folder's reference")])
    cache = get_settings().home.resolve() / "harbor-tasks"
    target = cache / digest
    if not target.is_dir():
        _unpack(_fetch(digest), cache, target)
    folders = [p for p in target.iterdir() if p.is_dir()]
    if len(folders) != 1:
        raise HarborTaskError([Problem(f"the kept task folder {target} holds {len(folders)} folders, not one")])
    return folders[0]


def _fetch(digest: str) -> bytes:
    from prefect_agentenv.artifacts import ArtifactError, get_artifact_store

    try:
        with get_artifact_store() as store:
            archive = gzip.decompress(store.get_object(store_key(digest)))
    except (ArtifactError, OSError) as exc:
        raise HarborTaskError([Problem(f"the Harbor task folder {REF_PREFIX}{digest[:12]}… is not in the artifact "
                                       f"store ({exc})")]) from None
    if hashlib.sha256(archive).hexdigest() != digest:
        raise HarborTaskError([Problem(f"the artifact store holds other content under {REF_PREFIX}{digest[:12]}…")])
    return archive


def _unpack(archive: bytes, cache: Path, target: Path) -> None:
    """Unpacked beside ``target``, then moved there in one step (a concurrent unpack of the same
    folder finds it whole or not at all)."""
    cache.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{target.name[:12]}-", dir=cache))
    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:") as tar:
            tar.extractall(scratch, filter="data")
        try:
            scratch.rename(target)
        except OSError:
            if not target.is_dir():
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


__all__ = ["REF_PREFIX", "folder_archive", "has_harbor_tasks", "is_kept_ref", "keep_task_folder", "kept_tasks",
           "task_folder"]
