"""What only the S3 backend does: map botocore's errors, and talk to a bucket that may be missing."""

from __future__ import annotations

import pytest
from botocore.client import BaseClient
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    ReadTimeoutError,
)

from prefect_agentenv.artifacts import (
    ArtifactNotFoundError,
    ArtifactStoreError,
    S3ArtifactBackend,
    UnsafeKeyError,
)
from prefect_agentenv.exceptions import AgentEnvError, ConfigurationError, ProtocolError
from servers import free_port

from .conftest import REGION, make_s3_store


def _client_error(code: str, status: int) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": f"{code} happened"},
                        "ResponseMetadata": {"HTTPStatusCode": status}}, "GetObject")


@pytest.mark.parametrize(("raised", "expected", "text"), [
    (_client_error("NoSuchKey", 404), ArtifactNotFoundError, "does not exist"),
    (_client_error("404", 404), ArtifactNotFoundError, "does not exist"),
    (_client_error("NoSuchBucket", 404), ArtifactStoreError, "bucket 'agentenv-artifacts' does not exist"),
    (_client_error("AccessDenied", 403), ArtifactStoreError, "denied"),
    (_client_error("InternalError", 500), ArtifactStoreError, "InternalError: InternalError happened"),
    (NoCredentialsError(), ArtifactStoreError, "no AWS credentials"),
    (EndpointConnectionError(endpoint_url="http://127.0.0.1:1"), ArtifactStoreError, "cannot reach"),
    (ConnectTimeoutError(endpoint_url="http://127.0.0.1:1"), ArtifactStoreError, "failed"),
    (ReadTimeoutError(endpoint_url="http://127.0.0.1:1"), ArtifactStoreError, "failed"),
    (BotoCoreError(), ArtifactStoreError, "failed"),
])
def test_every_botocore_error_becomes_a_store_error_chained_to_its_cause(
        s3_store_client: BaseClient, moto_endpoint: str, raised: Exception, expected: type[Exception],
        text: str) -> None:
    store = make_s3_store(moto_endpoint, client=s3_store_client)

    with pytest.raises(expected, match=text) as caught:
        with store._mapped_errors("artifacts/x/1/meta.json"):
            raise raised

    assert isinstance(caught.value, AgentEnvError)
    assert caught.value.__cause__ is raised


def test_a_store_error_names_the_object_and_the_s3_error_code(s3_store_client: BaseClient, moto_endpoint: str) -> None:
    store = make_s3_store(moto_endpoint, prefix="p", client=s3_store_client)

    with pytest.raises(ArtifactStoreError) as caught:
        with store._mapped_errors("runs/r.json"):
            raise _client_error("SlowDown", 503)

    assert isinstance(caught.value, ProtocolError)
    assert (caught.value.url, caught.value.code) == ("s3://agentenv-artifacts/p/runs/r.json", "SlowDown")


def test_a_missing_bucket_is_reported_with_its_name(s3_store_client: BaseClient, moto_endpoint: str) -> None:
    store = S3ArtifactBackend("no-such-bucket", endpoint_url=moto_endpoint, client=s3_store_client)

    with pytest.raises(ArtifactStoreError, match="bucket 'no-such-bucket' does not exist"):
        store.publish_files("notes", {"a.txt": b"x"})


def test_an_unreachable_endpoint_is_a_store_error() -> None:
    endpoint = f"http://127.0.0.1:{free_port()}"
    with S3ArtifactBackend("bucket", endpoint_url=endpoint, region_name=REGION,
                           aws_access_key_id="testing", aws_secret_access_key="testing") as store:
        with pytest.raises(ArtifactStoreError, match=f"cannot reach the artifact store at s3://bucket at {endpoint}"):
            store.get_object("run-1/report.json")


def test_an_invalid_endpoint_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="cannot set up an S3 client for bucket 'bucket'"):
        S3ArtifactBackend("bucket", endpoint_url="not a url")


def test_the_prefix_is_normalised_and_confined(s3_store_client: BaseClient, moto_endpoint: str) -> None:
    assert make_s3_store(moto_endpoint, prefix="/team/evals/", client=s3_store_client).prefix == "team/evals"
    with pytest.raises(UnsafeKeyError):
        make_s3_store(moto_endpoint, prefix="team/../other", client=s3_store_client)


def test_a_key_longer_than_s3_allows_is_refused_before_the_call(s3_store_client: BaseClient,
                                                                moto_endpoint: str) -> None:
    store = make_s3_store(moto_endpoint, prefix="p" * 200, client=s3_store_client)

    with pytest.raises(UnsafeKeyError, match="longer than S3's 1024 bytes"):
        store.put_object("/".join(["d" * 250] * 4), b"x")


def test_the_repr_shows_no_credentials(moto_endpoint: str) -> None:
    with S3ArtifactBackend("bucket", "p", endpoint_url=moto_endpoint, region_name=REGION,
                           aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="very-secret") as store:
        assert "secret" not in repr(store) and "AKID" not in repr(store)
