"""Datasets: stored records that Verial-style tasks bind their entities to.

A dataset is an environment artifact whose JSON files each hold ``{resource: [rows]}`` (the
shape the records env loads, e.g. ``{"patients": [...], "referrals": [...]}``). A row that
carries an ``entity_id`` can be bound by a task: the entity's fields are the row's.

Binding scopes the agent: only the bound rows, and the rows that share one of their ``…_id``
values (the patient of a bound referral, the requests about a bound patient), are loaded into
the env. One dataset of many patients thus serves many tasks, each seeing its own records.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

from prefect_agentenv.artifacts.store import ArtifactBackend
from prefect_agentenv.jsontypes import JsonObject, JsonValue

ENTITY_KEY = "entity_id"
"""The member of a dataset row naming the entity it is."""


class DatasetError(ValueError):
    """A dataset that cannot be read or used (not JSON, not ``{resource: [rows]}``)."""


class Dataset(BaseModel):
    """Every resource's rows, merged over the artifact's JSON files."""

    model_config = ConfigDict(extra="forbid")

    resources: dict[str, list[JsonObject]] = Field(default_factory=dict)

    def find(self, entity_id: str) -> tuple[str, JsonObject] | None:
        """The resource and row of an entity (None when no row carries that entity_id)."""
        for resource, rows in self.resources.items():
            for row in rows:
                if row.get(ENTITY_KEY) == entity_id:
                    return resource, row
        return None

    def entity_ids(self) -> list[str]:
        return [str(r[ENTITY_KEY]) for rows in self.resources.values() for r in rows if ENTITY_KEY in r]

    def scoped(self, entity_ids: Iterable[str]) -> JsonObject:
        """The rows the entities bind, every row sharing one of their ``…_id`` values, and the
        reference rows (no entity_id, no ``…_id``: phone lines, say), which every task sees.

        The answer is ``{resource: [rows]}``, the JSON a data part carries to the env.
        """
        wanted = set(entity_ids)
        bound = [row for rows in self.resources.values() for row in rows if row.get(ENTITY_KEY) in wanted]
        ids = {v for row in bound for v in _id_values(row)}

        def keep(row: JsonObject) -> bool:
            own = set(_id_values(row))
            return row.get(ENTITY_KEY) in wanted or bool(ids & own) or (ENTITY_KEY not in row and not own)

        scoped: JsonObject = {}
        for resource, rows in self.resources.items():
            kept: list[JsonValue] = [r for r in rows if keep(r)]
            if kept:
                scoped[resource] = kept
        return scoped


def _id_values(row: JsonObject) -> list[str]:
    """The values of a row's ``…_id`` members (its key and its references), entity_id aside."""
    return [str(v) for k, v in row.items() if k.endswith("_id") and k != ENTITY_KEY and isinstance(v, str | int)]


def parse_dataset(files: Iterable[tuple[str, bytes]]) -> Dataset:
    """Merge ``{resource: [rows]}`` JSON files into one dataset.

    Raises:
        DatasetError: a file is not JSON of that shape.
    """
    merged: dict[str, list[JsonObject]] = {}
    for name, data in files:
        try:
            content = json.loads(data)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise DatasetError(f"{name} is not JSON: {exc}") from None
        if not isinstance(content, dict) or not all(
                isinstance(rows, list) and all(isinstance(r, dict) for r in rows) for rows in content.values()):
            raise DatasetError(f"{name} must hold {{resource: [rows]}}, each row an object")
        for resource, rows in content.items():
            merged.setdefault(resource, []).extend(rows)
    return Dataset(resources=merged)


def read_dataset(store: ArtifactBackend, artifact_id: str, version: str | None = None) -> Dataset:
    """Read a stored dataset artifact (its ``.json`` files).

    Raises:
        ArtifactNotFoundError: no such artifact or version.
        DatasetError: its files are not datasets.
    """
    meta = store.get_metadata(artifact_id, version or "latest")
    files = [f.name for f in meta.files if f.name.endswith(".json")]
    if not files:
        raise DatasetError(f"artifact '{meta.id}@{meta.version}' has no .json file of records")
    return parse_dataset((name, store.read_file(meta, name)) for name in files)
