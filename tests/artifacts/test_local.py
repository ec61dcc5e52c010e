"""What only the local-folder backend does: stay inside its folder on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefect_agentenv.artifacts import LocalArtifactBackend, UnsafeKeyError


def test_a_symlink_planted_in_the_store_cannot_lead_outside_it(tmp_path: Path) -> None:
    store = LocalArtifactBackend(tmp_path / "store")
    (tmp_path / "store" / "runs").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "store" / "runs" / "run-1").symlink_to(tmp_path / "outside")

    with pytest.raises(UnsafeKeyError, match="resolves outside the store"):
        store.put_object("run-1/report.json", b"{}")
    assert list((tmp_path / "outside").iterdir()) == []


def test_the_store_folder_is_created_on_first_write(tmp_path: Path) -> None:
    store = LocalArtifactBackend(tmp_path / "not" / "yet")
    assert store.list_ids() == []

    store.publish_files("notes", {"a.txt": b"x"})

    assert (tmp_path / "not" / "yet" / "artifacts" / "notes" / "1" / "meta.json").is_file()
    assert not any(p.name.startswith(".agentenv-tmp-") for p in (tmp_path / "not").rglob("*"))
