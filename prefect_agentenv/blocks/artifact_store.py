"""The ArtifactStore block: where artifacts, trajectories and reports are kept."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from prefect.blocks.core import Block
from prefect_aws import S3Bucket
from pydantic import ConfigDict, SecretStr, field_validator, model_validator

from prefect_agentenv.artifacts import (
    ARTIFACT_STORE_BLOCK_SLUG,
    ArtifactBackend,
    LocalArtifactBackend,
    S3ArtifactBackend,
)
from prefect_agentenv.artifacts.keys import check_prefix
from prefect_agentenv.artifacts.s3_bucket import backend_from_s3_bucket
from prefect_agentenv.blocks.documentation import DOCUMENTATION_URL
from prefect_agentenv.settings import get_settings


class ArtifactStore(Block):
    """Where artifacts and run records are stored: a local folder or an S3 bucket (MinIO and moto work too),
    given here or as a prefect-aws S3Bucket block.

    The block holds configuration only; ``build_backend()`` returns the store that reads and
    writes. Name it in ``PREFECT_AGENTENV_ARTIFACT_STORE_BLOCK`` to make runs use it.

    Example:
        Load a saved store and publish a file artifact:
        ```python
        from prefect_agentenv.blocks import ArtifactStore

        artifact_store = ArtifactStore.load("BLOCK_NAME")
        with artifact_store.build_backend() as store:
            store.publish_files("notes", {"notes.txt": b"hello"})
        ```
    """

    model_config = ConfigDict(use_attribute_docstrings=True)

    _block_type_name = "AgentEnv Artifact Store"
    _block_type_slug = ARTIFACT_STORE_BLOCK_SLUG
    _documentation_url = DOCUMENTATION_URL

    kind: Literal["local", "s3"] = "local"
    """Where artifacts live: "local" (a folder on this machine) or "s3" (a bucket)."""
    path: Path | None = None
    """Folder of a local store; the artifacts folder under the agentenv home when empty."""
    bucket: str | None = None
    """Bucket of an S3 store (required when kind is "s3")."""
    prefix: str = ""
    """Folder inside the bucket that holds the store; no key ever leaves it."""
    endpoint_url: str | None = None
    """URL of an S3-compatible endpoint such as MinIO; AWS S3 when empty."""
    region: str | None = None
    """AWS region of the bucket; boto3's default when empty."""
    aws_access_key_id: SecretStr | None = None
    """Access key id; boto3's credential chain (environment, profile, role) when empty."""
    aws_secret_access_key: SecretStr | None = None
    """Secret access key that goes with the access key id."""
    s3_bucket: S3Bucket | None = None
    """A prefect-aws S3Bucket block (with its AwsCredentials or MinIOCredentials) to use instead of
    bucket, prefix, endpoint and keys; prefix then is its bucket_folder."""

    @field_validator("prefix")
    @classmethod
    def _confined_prefix(cls, value: str) -> str:
        return check_prefix(value)

    @model_validator(mode="after")
    def _bucket_for_s3(self) -> ArtifactStore:
        if self.s3_bucket is not None:
            self.kind = "s3"
        elif self.kind == "s3" and not self.bucket:
            raise ValueError('an S3 artifact store needs a bucket: set "bucket" or "s3_bucket"')
        return self

    def build_backend(self) -> ArtifactBackend:
        """The store this block describes, with its own connection (close it when done)."""
        if self.kind == "local":
            return LocalArtifactBackend(self.path or get_settings().artifacts_dir)
        if self.s3_bucket is not None:
            return backend_from_s3_bucket(self.s3_bucket)
        assert self.bucket is not None  # the validator requires it for s3
        return S3ArtifactBackend(
            self.bucket,
            self.prefix,
            endpoint_url=self.endpoint_url,
            region_name=self.region,
            aws_access_key_id=self.aws_access_key_id,
            aws_secret_access_key=self.aws_secret_access_key,
        )
