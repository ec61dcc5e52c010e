"""The artifact store on prefect-aws blocks: an S3Bucket named directly, or wrapped in an ArtifactStore,
with AwsCredentials or MinIOCredentials, against moto's S3 server."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from botocore.client import BaseClient
from prefect.client.orchestration import get_client
from prefect_aws import AwsCredentials, MinIOCredentials, S3Bucket

from prefect_agentenv.artifacts import S3ArtifactBackend, get_artifact_store
from prefect_agentenv.blocks import ArtifactStore
from prefect_agentenv.settings import get_settings

from .conftest import BUCKET, REGION

pytestmark = pytest.mark.usefixtures("prefect_harness")


def test_an_s3_bucket_block_named_in_the_setting_is_the_store(
        moto_endpoint: str, s3_client: BaseClient, agentenv_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = f"evals-{uuid.uuid4().hex[:6]}"
    credentials = AwsCredentials(aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION,
                                 aws_client_parameters={"endpoint_url": moto_endpoint})
    S3Bucket(bucket_name=BUCKET, bucket_folder=f"{name}/", credentials=credentials).save(name)
    monkeypatch.setenv("PREFECT_AGENTENV_ARTIFACT_STORE_BLOCK", f"s3-bucket/{name}")
    get_settings.cache_clear()

    with get_artifact_store() as store:
        assert isinstance(store, S3ArtifactBackend) and store.location.startswith(f"s3://{BUCKET}/{name}")
        meta = store.publish_files("notes", {"a.txt": b"hello"})
        assert store.read_file(meta, "a.txt") == b"hello"
    keys = [o["Key"] for o in s3_client.list_objects_v2(Bucket=BUCKET, Prefix=f"{name}/")["Contents"]]
    assert any(k.startswith(f"{name}/artifacts/notes/") for k in keys)


async def test_an_artifact_store_wraps_an_s3_bucket_with_minio_credentials_and_hides_them(
        moto_endpoint: str, s3_client: BaseClient) -> None:
    name = f"minio-{uuid.uuid4().hex[:6]}"
    credentials = MinIOCredentials(minio_root_user="minio-user-5e", minio_root_password="minio-secret-9d",
                                   region_name=REGION, aws_client_parameters={"endpoint_url": moto_endpoint})
    await ArtifactStore(s3_bucket=S3Bucket(bucket_name=BUCKET, bucket_folder=name, credentials=credentials)).asave(name)

    loaded = await ArtifactStore.aload(name)
    with loaded.build_backend() as store:
        assert isinstance(store, S3ArtifactBackend) and store.prefix == name
        meta = store.publish_files("chart", {"chart.txt": b"bars"})
        assert store.read_file(meta) == b"bars"
    async with get_client() as client:
        response = await client._client.post("/block_documents/filter", json={"include_secrets": False})
    assert "minio-secret-9d" not in response.text
