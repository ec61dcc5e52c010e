"""Kept Harbor folders: an archive of a container's folder, put back in another container as it was (a file
the image holds but the agent deleted stays deleted, owners kept), secrets masked inside the archive's files
without breaking it, and an archive over the size kept refused. The round trip needs the local docker
daemon (`make docker-up`)."""

from __future__ import annotations

import io
import tarfile
import uuid
from pathlib import Path

import pytest

from image_mode import TEST_IMAGE, require_image_mode
from prefect_agentenv.redaction import MASK, Redactor
from prefect_agentenv.runtime.harbor import kept
from prefect_agentenv.runtime.harbor.environment import (
    HarborEnvironmentError,
    exec_in,
    remove_environment,
    start_environment,
)
from prefect_agentenv.runtime.harbor.kept import archive_in, archive_out, is_kept_path, masked_archive


def archive_of(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.uid, info.mode = len(data), 1000, 0o640
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def members(archive: bytes) -> dict[str, tuple[bytes, int, int]]:
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        return {m.name: (tar.extractfile(m).read(), m.uid, m.mode) for m in tar if m.isfile()}  # type: ignore[union-attr]


def test_secrets_are_masked_in_the_files_of_an_archive_which_stays_a_valid_tar() -> None:
    archive = archive_of({"app/key.txt": b"token=s3cret-value-42\n", "app/blob.bin": b"\xff\xfe s3cret-value-42"})

    masked = members(masked_archive(archive, Redactor({"s3cret-value-42"})))

    assert masked["app/key.txt"] == (f"token={MASK}\n".encode(), 1000, 0o640)
    assert masked["app/blob.bin"][0] == b"\xff\xfe s3cret-value-42"  # not text: left alone, as a report's files
    assert masked_archive(archive, Redactor(set())) == archive


def test_only_absolute_paths_below_the_root_are_kept() -> None:
    assert is_kept_path("/app") and is_kept_path("/logs/artifacts")
    assert not is_kept_path("/") and not is_kept_path("app")


@pytest.fixture(scope="module")
def daemon() -> None:
    require_image_mode()


async def test_a_folder_is_put_back_in_a_fresh_container_as_the_agent_left_it(daemon: None, tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    run_id = f"kept-{uuid.uuid4().hex[:8]}"
    first = await start_environment(TEST_IMAGE, workdir="/app", env={}, network="none", run_id=run_id)
    second = await start_environment(TEST_IMAGE, workdir="/app", env={}, network="none", run_id=run_id)
    try:
        await exec_in(first, "echo made > /app/made.txt && chown 1000 /app/made.txt", user="root", timeout=30)
        await exec_in(second, "echo image > /app/from-image.txt", user="root", timeout=30)
        assert await archive_out(first, "/app", tmp_path / "app.tar")
        assert not await archive_out(first, "/absent", tmp_path / "absent.tar")
        assert not (tmp_path / "absent.tar").exists()

        await archive_in(second, "/app", (tmp_path / "app.tar").read_bytes())

        listed = await exec_in(second, "stat -c '%n %u' /app/*", user="root", timeout=30)
        assert listed.output.split("\n")[:-1] == ["/app/made.txt 1000"]

        monkeypatch.setattr(kept, "MAX_KEPT_BYTES", 1024)  # what the agent's workdir holds is its to choose
        with pytest.raises(HarborEnvironmentError, match="over the 0 MB kept for a rescore"):
            await archive_out(first, "/app", tmp_path / "big.tar")
        assert not (tmp_path / "big.tar").exists()
    finally:
        await remove_environment(first)
        await remove_environment(second)
