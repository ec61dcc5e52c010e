"""The artifact store: versioned environment artifacts, file artifacts and universes, plus run records.

Use :func:`get_artifact_store` for the configured store: the ArtifactStore block named by
``PREFECT_AGENTENV_ARTIFACT_STORE_BLOCK``, else the local folder under the agentenv home.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from prefect_agentenv.artifacts.keys import LATEST, UnsafeKeyError
from prefect_agentenv.artifacts.local import LocalArtifactBackend
from prefect_agentenv.artifacts.models import ArtifactFile, ArtifactKind, ArtifactMetadata, ArtifactRef
from prefect_agentenv.artifacts.store import (
    ArtifactBackend,
    ArtifactConflictError,
    ArtifactIntegrityError,
    ArtifactNotFoundError,
    ArtifactStoreError,
    FileSource,
)
from prefect_agentenv.exceptions import ArtifactError, ConfigurationError

if TYPE_CHECKING:
    from prefect_agentenv.artifacts.s3 import S3ArtifactBackend

__all__ = [
    "LATEST",
    "ArtifactBackend",
    "ArtifactConflictError",
    "ArtifactError",
    "ArtifactFile",
    "ArtifactIntegrityError",
    "ArtifactKind",
    "ArtifactMetadata",
    "ArtifactNotFoundError",
    "ArtifactRef",
    "ArtifactStoreError",
    "FileSource",
    "LocalArtifactBackend",
    "S3ArtifactBackend",
    "UnsafeKeyError",
    "get_artifact_store",
]

ARTIFACT_STORE_BLOCK_SLUG = "agentenv-artifact-store"


def __getattr__(name: str) -> Any:
    # boto3 costs a noticeable share of a CLI start; only S3 users pay for it.
    if name == "S3ArtifactBackend":
        return importlib.import_module("prefect_agentenv.artifacts.s3").S3ArtifactBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@runtime_checkable
class _BuildsBackend(Protocol):
    def build_backend(self) -> ArtifactBackend: ...


def get_artifact_store() -> ArtifactBackend:
    """The store this process is configured to use; the caller owns it (``close()`` when done).

    ``PREFECT_AGENTENV_ARTIFACT_STORE_BLOCK`` names an ArtifactStore block (``NAME``) or a
    prefect-aws S3Bucket block (``s3-bucket/NAME``). The block is loaded by slug through Prefect's
    registry (the ``prefect.collections`` entry point registers it), so this layer does not import ``blocks``, which imports it. Loading
    a block calls the Prefect API: from async code, run this in ``asyncio.to_thread``.

    Raises:
        ConfigurationError: the named block does not exist or cannot be loaded.
    """
    # Settings sit on Prefect's settings base: read on use, so importing this package stays light.
    from prefect_agentenv.settings import get_settings

    settings = get_settings()
    name = settings.artifact_store_block
    if not name:
        return LocalArtifactBackend(settings.artifacts_dir)
    # Imported here: the local store, and documents that only name artifacts, never need Prefect.
    import httpx
    from prefect.blocks.core import Block
    from prefect_aws import S3Bucket

    from prefect_agentenv.artifacts.s3_bucket import backend_from_s3_bucket

    slug_name = name if "/" in name else f"{ARTIFACT_STORE_BLOCK_SLUG}/{name}"
    try:
        block = Block.load(slug_name, _sync=True)  # type: ignore[call-arg]  # async_dispatch's switch
    except ValueError as exc:
        raise ConfigurationError(
            f"ArtifactStore block {name!r} not found ({exc}): save one under that name, or unset "
            "PREFECT_AGENTENV_ARTIFACT_STORE_BLOCK to use the local folder") from exc
    except (httpx.HTTPError, OSError) as exc:
        raise ConfigurationError(f"cannot load ArtifactStore block {name!r} from the Prefect API: {exc}") from exc
    if isinstance(block, S3Bucket):
        return backend_from_s3_bucket(block)
    if not isinstance(block, _BuildsBackend):
        raise ConfigurationError(f"block {slug_name!r} is a {type(block).__name__}, not an ArtifactStore "
                                 "or an S3Bucket")
    return block.build_backend()
