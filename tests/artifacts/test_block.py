"""The ArtifactStore block: configuration saved in Prefect, loaded by name, turned into a store."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from botocore.client import BaseClient
from pydantic import SecretStr, ValidationError

from prefect_agentenv.artifacts import LocalArtifactBackend, S3ArtifactBackend, get_artifact_store
from prefect_agentenv.blocks import ArtifactStore
from prefect_agentenv.exceptions import ConfigurationError
from prefect_agentenv.settings import get_settings

from .conftest import BUCKET, REGION


def test_an_s3_store_needs_a_bucket() -> None:
    with pytest.raises(ValidationError, match="an S3 artifact store needs a bucket"):
        ArtifactStore(kind="s3")


def test_the_prefix_cannot_leave_the_bucket_folder() -> None:
    with pytest.raises(ValidationError, match="must stay inside the store"):
        ArtifactStore(kind="s3", bucket=BUCKET, prefix="evals/../../other")


def test_a_local_store_defaults_to_the_artifacts_folder_of_the_home(agentenv_home: Path) -> None:
    with ArtifactStore().build_backend() as store:
        assert isinstance(store, LocalArtifactBackend)
        assert store.root == (agentenv_home / "store").resolve()


def test_a_saved_s3_store_loads_by_name_and_reaches_its_bucket(
        prefect_harness: None, moto_endpoint: str, s3_client: BaseClient) -> None:
    name = f"s3-{uuid.uuid4().hex[:8]}"
    ArtifactStore(kind="s3", bucket=BUCKET, prefix="block-test", endpoint_url=moto_endpoint, region=REGION,
                  aws_access_key_id=SecretStr("testing"), aws_secret_access_key=SecretStr("testing")).save(name)

    loaded = ArtifactStore.load(name)

    assert loaded.aws_secret_access_key is not None
    assert loaded.aws_secret_access_key.get_secret_value() == "testing"
    with loaded.build_backend() as store:
        assert isinstance(store, S3ArtifactBackend)
        meta = store.publish_files(f"notes-{name}", {"a.txt": b"hello"})
        assert store.file_url(meta).startswith(f"s3://{BUCKET}/block-test/artifacts/")
        assert store.read_file(meta) == b"hello"


def test_the_configured_block_is_the_store_every_caller_gets(
        prefect_harness: None, agentenv_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = f"local-{uuid.uuid4().hex[:8]}"
    ArtifactStore(kind="local", path=tmp_path / "shared-store").save(name)
    monkeypatch.setenv("PREFECT_AGENTENV_ARTIFACT_STORE_BLOCK", name)
    get_settings.cache_clear()

    with get_artifact_store() as store:
        assert isinstance(store, LocalArtifactBackend)
        assert store.root == (tmp_path / "shared-store").resolve()


def test_without_a_block_the_store_is_the_local_folder_of_the_home(agentenv_home: Path) -> None:
    with get_artifact_store() as store:
        assert isinstance(store, LocalArtifactBackend)
        assert store.root == (agentenv_home / "store").resolve()


def test_an_unknown_block_name_is_a_configuration_error(
        prefect_harness: None, agentenv_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREFECT_AGENTENV_ARTIFACT_STORE_BLOCK", "no-such-store")
    get_settings.cache_clear()

    with pytest.raises(ConfigurationError, match="ArtifactStore block 'no-such-store' not found"):
        get_artifact_store()
