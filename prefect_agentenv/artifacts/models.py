"""What the store records about each published artifact version."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from prefect_agentenv.artifacts.keys import LATEST, check_id, check_path, check_version, split_ref
from prefect_agentenv.attribute_docs import attribute_docstrings

ArtifactKind = Literal["environment", "file", "universe"]
"""``environment``: one file loaded into an env's data plane; ``file``: files copied into a
sandbox; ``universe``: a manifest of file artifacts, each pinned to a version."""


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=attribute_docstrings)


class ArtifactRef(_Frozen):
    """An artifact id with a version, written ``ID@VERSION`` (``latest`` when omitted)."""

    id: str
    """Id of the artifact."""
    version: str = LATEST
    """A published version, or ``latest`` for the newest one."""

    @field_validator("id")
    @classmethod
    def _valid_id(cls, value: str) -> str:
        return check_id(value)

    @field_validator("version")
    @classmethod
    def _valid_version(cls, value: str) -> str:
        return check_version(value, allow_latest=True)

    @classmethod
    def parse(cls, text: str) -> ArtifactRef:
        """Read ``ID`` or ``ID@VERSION``.

        Raises:
            UnsafeKeyError: the id or version is not a valid key segment.
        """
        artifact_id, version = split_ref(text)
        return cls(id=artifact_id, version=version)

    def __str__(self) -> str:
        return f"{self.id}@{self.version}"


class ArtifactFile(_Frozen):
    """One stored file of an artifact version."""

    name: str
    """Path of the file relative to the artifact (``q3.png``, ``data/inbox.json``)."""
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """Hex sha256 of the content; checked on every read."""
    size: int = Field(ge=0)
    """Size in bytes."""

    @field_validator("name")
    @classmethod
    def _valid_name(cls, value: str) -> str:
        return check_path(value)


class ArtifactMetadata(_Frozen):
    """One published version of an artifact; immutable once published."""

    id: str
    """Id of the artifact."""
    version: str
    """The version this record describes (never ``latest``)."""
    kind: ArtifactKind
    """What the artifact is and how it is loaded."""
    environment_name: str | None = None
    """For environment artifacts: the name of the env the data is for."""
    files: tuple[ArtifactFile, ...] = ()
    """The stored files, sorted by name (none for a universe)."""
    members: tuple[ArtifactRef, ...] = ()
    """For universes: the member file artifacts, each pinned to a published version."""
    created_at: datetime
    """When the version was first published (UTC); orders versions for ``latest``."""

    @field_validator("id")
    @classmethod
    def _valid_id(cls, value: str) -> str:
        return check_id(value)

    @field_validator("version")
    @classmethod
    def _valid_version(cls, value: str) -> str:
        return check_version(value)

    @model_validator(mode="after")
    def _shape_matches_kind(self) -> ArtifactMetadata:
        names = [f.name for f in self.files]
        if len(set(names)) != len(names):
            raise ValueError("file names of an artifact must be unique")
        if self.kind == "environment":
            if not self.environment_name:
                raise ValueError("an environment artifact needs the environment_name it is for")
            if len(self.files) != 1:
                raise ValueError(f"an environment artifact holds exactly one file, not {len(self.files)}")
        elif self.environment_name is not None:
            raise ValueError(f"environment_name applies to environment artifacts, not {self.kind} artifacts")
        if self.kind == "file" and not self.files:
            raise ValueError("a file artifact holds at least one file")
        if self.kind == "universe":
            if self.files:
                raise ValueError("a universe lists member artifacts; it holds no files of its own")
            ids = [m.id for m in self.members]
            if len(set(ids)) != len(ids):
                raise ValueError("a universe lists each member artifact once")
            if any(m.version == LATEST for m in self.members):
                raise ValueError("universe members are pinned to a published version, not 'latest'")
        elif self.members:
            raise ValueError(f"members apply to universes, not {self.kind} artifacts")
        return self

    @property
    def ref(self) -> ArtifactRef:
        return ArtifactRef(id=self.id, version=self.version)

    def find_file(self, name: str) -> ArtifactFile | None:
        return next((f for f in self.files if f.name == name), None)

    def same_content(self, other: ArtifactMetadata) -> bool:
        """Whether two records describe the same artifact content (their timestamps aside)."""
        return self.model_dump(exclude={"created_at"}) == other.model_dump(exclude={"created_at"})
