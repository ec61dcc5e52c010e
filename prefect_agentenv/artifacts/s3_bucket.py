"""Artifact stores on prefect-aws ``S3Bucket`` blocks, where Prefect users already keep S3.

The bucket block gives the bucket, its ``bucket_folder`` (the store's prefix) and its credentials
block (``AwsCredentials`` or ``MinIOCredentials``), whose ``get_s3_client()`` builds the client:
endpoint, region and keys come from there, never from our own settings.
"""

from __future__ import annotations

from botocore.exceptions import BotoCoreError
from prefect_aws import S3Bucket

from prefect_agentenv.artifacts.s3 import S3ArtifactBackend
from prefect_agentenv.exceptions import ConfigurationError

S3_BUCKET_BLOCK_SLUG = "s3-bucket"


def backend_from_s3_bucket(bucket: S3Bucket) -> S3ArtifactBackend:
    """The store in ``bucket`` under its folder, with a client of its own (closed with the store).

    Raises:
        ConfigurationError: the credentials block cannot make an S3 client.
    """
    try:
        client = bucket.credentials.get_s3_client()
    except (BotoCoreError, ValueError) as exc:
        raise ConfigurationError(f"the credentials of S3Bucket {bucket.bucket_name!r} cannot make an S3 client: "
                                 f"{exc}") from exc
    endpoint = bucket.credentials.aws_client_parameters.endpoint_url
    return S3ArtifactBackend(bucket.bucket_name, bucket.bucket_folder or "", endpoint_url=endpoint, client=client,
                             owns_client=True)
