"""Attribute docstrings read at JSON Schema time give the schema pydantic's own option gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from prefect_agentenv import attribute_docs
from prefect_agentenv.attribute_docs import attribute_docstrings
from prefect_agentenv.documents import TaskDocument

THEIRS = ConfigDict(use_attribute_docstrings=True)
OURS = ConfigDict(json_schema_extra=attribute_docstrings)

# The same models twice, one per config (attribute docstrings are read from module-level classes):
# the child inherits one field, redefines one without a docstring and one with its own, and has a
# field under an alias, one with an explicit description and a nested model.


class InnerTheirs(BaseModel):
    model_config = THEIRS

    depth: int = 0
    """How deep."""


class InnerOurs(BaseModel):
    model_config = OURS

    depth: int = 0
    """How deep."""


class ParentTheirs(BaseModel):
    model_config = THEIRS

    kept: str = "a"
    """Inherited as it is."""
    renamed: str | None = None
    """The parent's words."""
    quiet: int = 1
    """Redefined below without a docstring."""


class ParentOurs(BaseModel):
    model_config = OURS

    kept: str = "a"
    """Inherited as it is."""
    renamed: str | None = None
    """The parent's words."""
    quiet: int = 1
    """Redefined below without a docstring."""


class ChildTheirs(ParentTheirs):
    renamed: str | None = None
    """The child's words."""
    quiet: int = 2
    aliased: list[str] = Field(default_factory=list, alias="alsoKnownAs")
    """Written under an alias."""
    explicit: bool = Field(default=False, description="Given in Field.")
    """Loses to the Field's description."""
    inner: InnerTheirs | None = None
    """A nested model."""
    plain: float = 0.0


class ChildOurs(ParentOurs):
    renamed: str | None = None
    """The child's words."""
    quiet: int = 2
    aliased: list[str] = Field(default_factory=list, alias="alsoKnownAs")
    """Written under an alias."""
    explicit: bool = Field(default=False, description="Given in Field.")
    """Loses to the Field's description."""
    inner: InnerOurs | None = None
    """A nested model."""
    plain: float = 0.0


def _renamed(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with the models' names made equal (``...Ours`` reads as ``...Theirs``)."""
    return json.loads(json.dumps(schema).replace("Ours", "Theirs"))


@pytest.mark.parametrize("mode", ["validation", "serialization"])
@pytest.mark.parametrize("by_alias", [True, False])
def test_the_schema_is_the_one_pydantic_builds_from_docstrings(mode: str, by_alias: bool) -> None:
    for theirs, ours in ((ParentTheirs, ParentOurs), (ChildTheirs, ChildOurs)):
        expected = theirs.model_json_schema(mode=mode, by_alias=by_alias)  # type: ignore[arg-type]
        assert _renamed(ours.model_json_schema(mode=mode, by_alias=by_alias)) == expected  # type: ignore[arg-type]
        assert "description" in expected["properties"]["kept"]


def test_fields_carry_no_description_until_a_schema_asks() -> None:
    assert ChildOurs.model_fields["kept"].description is None
    assert ChildOurs.model_json_schema()["properties"]["kept"]["description"] == "Inherited as it is."


def test_the_task_document_schema_keeps_its_field_descriptions() -> None:
    properties = TaskDocument.model_json_schema()["properties"]
    assert properties["tags"]["description"] == "Labels shown on the flow run."
    assert properties["id"]["description"].startswith("Task id")


def test_a_class_without_readable_source_gets_no_descriptions() -> None:
    namespace: dict[str, object] = {}
    exec("from pydantic import BaseModel, ConfigDict\n"  # noqa: S102 - a class with no source file
         "class NoSource(BaseModel):\n    x: int = 0\n    'never read'\n", namespace)
    model = namespace["NoSource"]
    assert isinstance(model, type) and issubclass(model, BaseModel)
    model.model_config["json_schema_extra"] = attribute_docstrings
    model.model_rebuild(force=True)
    assert "description" not in model.model_json_schema()["properties"]["x"]


def test_only_blocks_and_what_they_inherit_read_docstrings_at_class_creation() -> None:
    """Prefect builds a block's schema with its own ``json_schema_extra``, so blocks (and the
    launch fields they inherit) keep pydantic's option; every other model reads docstrings late."""
    package = Path(attribute_docs.__file__).parent
    users = sorted(str(p.relative_to(package)) for p in package.rglob("*.py")
                   if "use_attribute_docstrings=True" in p.read_text(encoding="utf-8"))
    assert users == ["blocks/agent.py", "blocks/artifact_store.py", "blocks/environment.py",
                     "blocks/model_endpoint.py", "runtime/confinement/network_allow.py", "runtime/launch/base.py"]
