"""Fixtures of the artifact store tests: one suite, run over a local folder and over S3 (moto)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from botocore.client import BaseClient
from moto.server import ThreadedMotoServer

from prefect_agentenv.artifacts import ArtifactBackend, LocalArtifactBackend, S3ArtifactBackend

BUCKET = "agentenv-artifacts"
REGION = "us-east-1"


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    """A real S3 API (moto's server) on a free loopback port, for the tests of one module."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture(scope="module")
def s3_client(moto_endpoint: str) -> Iterator[BaseClient]:
    """A plain boto3 client on the moto server, with the test bucket created."""
    # moto accepts any credentials; passing them keeps boto3 away from the machine's own.
    client = boto3.client("s3", endpoint_url=moto_endpoint, region_name=REGION,
                          aws_access_key_id="testing", aws_secret_access_key="testing")
    client.create_bucket(Bucket=BUCKET)
    yield client
    client.close()


@pytest.fixture(scope="module")
def s3_store_client(moto_endpoint: str, s3_client: BaseClient) -> Iterator[BaseClient]:
    """One client made the way the S3 backend makes it, shared by the module's stores (a client costs ~0.4 s)."""
    with make_s3_store(moto_endpoint) as owner:
        yield owner.client


def make_s3_store(endpoint: str, prefix: str | None = None, client: BaseClient | None = None) -> S3ArtifactBackend:
    """A store under a fresh prefix, so tests sharing the bucket never see each other's objects."""
    return S3ArtifactBackend(BUCKET, prefix or f"tests/{uuid.uuid4().hex}", endpoint_url=endpoint, region_name=REGION,
                             aws_access_key_id="testing", aws_secret_access_key="testing", client=client)


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ArtifactBackend]:
    """The same store contract, over each backend."""
    if request.param == "local":
        backend: ArtifactBackend = LocalArtifactBackend(tmp_path / "store")
    else:
        backend = make_s3_store(request.getfixturevalue("moto_endpoint"),
                                client=request.getfixturevalue("s3_store_client"))
    with backend:
        yield backend
