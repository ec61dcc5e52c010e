"""The S3 artifact store, through boto3; any S3-compatible endpoint (MinIO, moto) works.

botocore errors are mapped here, at the boundary, to the store's exceptions.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing, contextmanager
from typing import TypedDict

import boto3
from botocore.client import BaseClient
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError, NoCredentialsError
from pydantic import SecretStr

from prefect_agentenv.artifacts.keys import MAX_KEY_BYTES, UnsafeKeyError, check_prefix
from prefect_agentenv.artifacts.store import ArtifactBackend, ArtifactNotFoundError, ArtifactStoreError
from prefect_agentenv.exceptions import ConfigurationError
from prefect_agentenv.settings import get_settings

_NOT_FOUND = {"NoSuchKey", "404", "NotFound"}
# 412: the object exists; 409: a concurrent conditional write to the same key is in flight.
_ALREADY_EXISTS = {"PreconditionFailed", "ConditionalRequestConflict"}
_DENIED = {"AccessDenied", "403", "InvalidAccessKeyId", "SignatureDoesNotMatch"}
PRESIGNED_URL_SECONDS = 7 * 24 * 3600
"""Lifetime of the links shown in the Prefect UI: a week, the longest SigV4 allows."""


class S3ArtifactBackend(ArtifactBackend):
    """Artifacts and run records under ``prefix`` in one bucket.

    One boto3 client per instance, made from a private session (clients are thread-safe,
    sessions are not), unless ``client`` is given. Credentials default to boto3's chain
    (environment, profile, role).

    Raises:
        ConfigurationError: the endpoint URL or client options are invalid.
        UnsafeKeyError: the prefix would leave the bucket's folder.
    """

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        *,
        endpoint_url: str | None = None,
        region_name: str | None = None,
        aws_access_key_id: SecretStr | str | None = None,
        aws_secret_access_key: SecretStr | str | None = None,
        client: BaseClient | None = None,
        owns_client: bool | None = None,
    ) -> None:
        self.bucket = bucket
        self.prefix = check_prefix(prefix)
        self.endpoint_url = endpoint_url
        self._owns_client = client is None if owns_client is None else owns_client
        try:
            self._client = client or _make_client(endpoint_url, region_name, aws_access_key_id, aws_secret_access_key)
        except (BotoCoreError, ValueError) as exc:
            raise ConfigurationError(f"cannot set up an S3 client for bucket {bucket!r}: {exc}") from exc

    def __repr__(self) -> str:
        endpoint = f", endpoint_url={self.endpoint_url!r}" if self.endpoint_url else ""
        return f"S3ArtifactBackend({self.bucket!r}, {self.prefix!r}{endpoint})"

    @property
    def location(self) -> str:
        where = f"s3://{self.bucket}/{self.prefix}".rstrip("/")
        return f"{where} at {self.endpoint_url}" if self.endpoint_url else where

    @property
    def client(self) -> BaseClient:
        """The boto3 S3 client; pass it to another instance to share its connection pool."""
        return self._client

    def close(self) -> None:
        """Close the client, unless it was passed in (its owner closes it)."""
        if self._owns_client:
            self._client.close()

    def _full(self, key: str) -> str:
        full = f"{self.prefix}/{key}" if self.prefix else key
        if len(full.encode()) > MAX_KEY_BYTES:
            raise UnsafeKeyError(f"key {full!r} is longer than S3's {MAX_KEY_BYTES} bytes")
        return full

    def _url(self, key: str) -> str:
        return f"s3://{self.bucket}/{self._full(key)}"

    def browser_url(self, url: str) -> str | None:
        """A presigned GET URL (valid ``PRESIGNED_URL_SECONDS``) for an ``s3://`` URL of this bucket."""
        prefix = f"s3://{self.bucket}/"
        if not url.startswith(prefix):
            return None
        try:
            return str(self.client.generate_presigned_url(
                "get_object", Params={"Bucket": self.bucket, "Key": url[len(prefix):]},
                ExpiresIn=PRESIGNED_URL_SECONDS))
        except (BotoCoreError, ClientError):  # no credentials to sign with: the s3:// address stays
            return None

    @contextmanager
    def _mapped_errors(self, key: str) -> Iterator[None]:
        """Turn botocore errors raised by S3 calls on ``key`` into the store's exceptions."""
        url = self._url(key)
        try:
            yield
        except ClientError as exc:
            error = exc.response.get("Error", {})
            code = str(error.get("Code", ""))
            if code in _NOT_FOUND:
                raise ArtifactNotFoundError(f"{url} does not exist") from exc
            if code == "NoSuchBucket":
                raise ArtifactStoreError(f"bucket {self.bucket!r} does not exist ({self.location})",
                                         url=url, code=code) from exc
            if code in _DENIED:
                raise ArtifactStoreError(f"access to {url} denied ({code}): check the store's credentials",
                                         url=url, code=code) from exc
            message = error.get("Message") or str(exc)
            raise ArtifactStoreError(f"S3 error on {url}: {code}: {message}", url=url, code=code) from exc
        except NoCredentialsError as exc:
            raise ArtifactStoreError("no AWS credentials: set them on the ArtifactStore block or in the "
                                     "environment", url=url) from exc
        except EndpointConnectionError as exc:
            raise ArtifactStoreError(f"cannot reach the artifact store at {self.location}: {exc}", url=url) from exc
        except BotoCoreError as exc:
            raise ArtifactStoreError(f"S3 request for {url} failed: {exc}", url=url) from exc

    def _get(self, key: str) -> bytes:
        with self._mapped_errors(key):
            response = self._client.get_object(Bucket=self.bucket, Key=self._full(key))
            with closing(response["Body"]) as body:
                data: bytes = body.read()
        return data

    def _put(self, key: str, data: bytes, *, if_absent: bool = False) -> bool:
        # S3 (since 2024), MinIO and moto honour If-None-Match on PUT: an atomic create-if-absent.
        extra = {"IfNoneMatch": "*"} if if_absent else {}
        try:
            with self._mapped_errors(key):
                self._client.put_object(Bucket=self.bucket, Key=self._full(key), Body=data, **extra)
        except ArtifactStoreError as exc:
            if if_absent and exc.code in _ALREADY_EXISTS:
                return False
            raise
        return True

    def _exists(self, key: str) -> bool:
        try:
            with self._mapped_errors(key):
                self._client.head_object(Bucket=self.bucket, Key=self._full(key))
        except ArtifactNotFoundError:
            return False
        return True

    def _list(self, folder: str, *, recursive: bool = False) -> list[str]:
        base = self._full(folder) + "/"
        options = {} if recursive else {"Delimiter": "/"}
        names: list[str] = []
        with self._mapped_errors(folder):
            for page in self._client.get_paginator("list_objects_v2").paginate(
                    Bucket=self.bucket, Prefix=base, **options):
                names.extend(p["Prefix"][len(base):].rstrip("/") for p in page.get("CommonPrefixes", []))
                names.extend(o["Key"][len(base):] for o in page.get("Contents", []))
        return [n for n in names if n]


class _ClientOptions(TypedDict, total=False):
    """The botocore ``Config`` arguments the store sets."""

    retries: dict[str, int | str]
    connect_timeout: float
    read_timeout: float
    s3: dict[str, str]
    request_checksum_calculation: str
    response_checksum_validation: str


def _make_client(endpoint_url: str | None, region_name: str | None,
                 access_key_id: SecretStr | str | None, secret_access_key: SecretStr | str | None) -> BaseClient:
    settings = get_settings()
    # Bounded: an endpoint that accepts connections but never answers fails in about
    # max_attempts x (connect + read timeout), not minutes (PREFECT_AGENTENV_S3_* settings).
    options: _ClientOptions = {"retries": {"max_attempts": settings.s3_max_attempts, "mode": "standard"},
                                 "connect_timeout": settings.s3_connect_timeout_seconds,
                                 "read_timeout": settings.s3_read_timeout_seconds}
    if endpoint_url:
        # S3-compatible servers (MinIO, moto) want path-style addressing, and some reject the
        # CRC checksums boto3 adds by default; sha256 is checked on every read anyway.
        options |= {"s3": {"addressing_style": "path"}, "request_checksum_calculation": "when_required",
                    "response_checksum_validation": "when_required"}
    session = boto3.session.Session(
        aws_access_key_id=_reveal(access_key_id),
        aws_secret_access_key=_reveal(secret_access_key),
        region_name=region_name,
    )
    client: BaseClient = session.client("s3", endpoint_url=endpoint_url, config=Config(**options))
    return client


def _reveal(value: SecretStr | str | None) -> str | None:
    return value.get_secret_value() if isinstance(value, SecretStr) else value
