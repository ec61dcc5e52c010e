"""The JSON Schema of task documents: a valid schema, discriminated on ``type``, documented from the code."""

from __future__ import annotations

import ast
import inspect
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from prefect_agentenv.documents import TaskDocument
from prefect_agentenv.steps.base import DependsOnRef, RetryConfig, StepModel
from prefect_agentenv.steps.registry import all_steps
from prefect_agentenv.steps.rubrics_verifier import Criterion

VALID = Path(__file__).parent / "valid"
SCHEMA: dict[str, Any] = TaskDocument.model_json_schema()


def resolve(ref: str) -> dict[str, Any]:
    assert ref.startswith("#/$defs/"), ref
    return SCHEMA["$defs"][ref.removeprefix("#/$defs/")]


def step_items() -> dict[str, Any]:
    return SCHEMA["properties"]["steps"]["items"]


def attribute_docstrings(model: type[BaseModel]) -> dict[str, str]:
    """Field name -> the docstring written under it, read from the source of the model and its bases."""
    found: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)) or cls is BaseModel:
            continue
        try:
            source = textwrap.dedent(inspect.getsource(cls))
        except (OSError, TypeError):
            continue
        body = ast.parse(source).body[0].body  # type: ignore[attr-defined]
        for node, after in zip(body, [*body[1:], None], strict=True):
            if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
                continue
            found.pop(node.target.id, None)  # a redefinition without a docstring has none
            value = after.value if isinstance(after, ast.Expr) else None
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                found[node.target.id] = inspect.cleandoc(value.value)
    return found


def test_the_schema_is_json() -> None:
    assert json.loads(json.dumps(SCHEMA)) == SCHEMA


def test_the_schema_is_a_valid_json_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")

    jsonschema.validators.validator_for(SCHEMA).check_schema(SCHEMA)


def test_the_schema_describes_a_task_as_an_id_and_a_non_empty_list_of_steps() -> None:
    assert SCHEMA["type"] == "object"
    assert SCHEMA["additionalProperties"] is False
    assert SCHEMA["required"] == ["steps"]
    assert {"id", "description", "tags", "steps", "skip_policy", "limits", "scoring"} == set(SCHEMA["properties"])
    assert SCHEMA["properties"]["steps"]["type"] == "array"
    assert SCHEMA["properties"]["steps"]["minItems"] == 1


def test_the_scoring_of_task_and_benchmark_documents_is_one_documented_shape() -> None:
    from prefect_agentenv.documents.schema import document_schema

    full = document_schema()
    defs = full["$defs"]
    refs = [defs["TaskDocument"]["properties"]["scoring"], defs["BenchmarkDefaults"]["properties"]["scoring"],
            defs["StepDocumentTask"]["properties"]["scoring"], defs["VerialTask"]["properties"]["scoring"]]
    assert all({"$ref": "#/$defs/ScoringConfig"} in r["anyOf"] for r in refs)
    scoring = defs["ScoringConfig"]
    assert scoring["additionalProperties"] is False
    assert scoring["properties"]["mode"]["enum"] == ["shared", "isolated"]
    assert set(scoring["properties"]) == {"mode", "runtime", "env", "network", "retries", "skip_on_truncated",
                                          "skip_on_timeout", "skip_policy"}
    assert defs["ScoringRetries"]["properties"]["max_retries"] == {
        "default": 2, "minimum": 0, "title": "Max Retries", "type": "integer",
        "description": "How many times a failed isolated scoring is tried again (so 1 + max_retries attempts)."}
    assert "fresh" in scoring["properties"]["mode"]["description"]


def test_steps_are_discriminated_on_type_and_every_registered_step_type_is_listed() -> None:
    items = step_items()
    mapping = items["discriminator"]["mapping"]

    assert items["discriminator"]["propertyName"] == "type"
    assert set(mapping) == set(all_steps())
    assert sorted(v["$ref"] for v in items["oneOf"]) == sorted(mapping.values())


@pytest.mark.parametrize("step_type", sorted(all_steps()))
def test_each_step_type_maps_to_a_closed_object_whose_type_is_that_constant(step_type: str) -> None:
    definition = resolve(step_items()["discriminator"]["mapping"][step_type])

    assert definition["type"] == "object"
    assert definition["properties"]["type"]["const"] == step_type
    assert definition["additionalProperties"] is False
    assert "id" in definition["required"]
    assert {"id", "version", "depends_on", "fail_task_on_error", "retry_config"} <= set(definition["properties"])
    assert definition["properties"]["fail_task_on_error"]["default"] is True


@pytest.mark.parametrize("step_type", sorted(all_steps()))
def test_each_step_type_is_described_by_its_class_docstring(step_type: str) -> None:
    model = all_steps()[step_type].model
    definition = resolve(step_items()["discriminator"]["mapping"][step_type])

    assert model.__doc__
    assert definition["description"] == inspect.cleandoc(model.__doc__)


@pytest.mark.parametrize(
    "model",
    [TaskDocument, RetryConfig, DependsOnRef, Criterion, *(d.model for _, d in sorted(all_steps().items()))],
    ids=lambda m: m.__name__,
)
def test_field_descriptions_come_from_the_attribute_docstrings(model: type[BaseModel]) -> None:
    docstrings = attribute_docstrings(model)
    properties = SCHEMA["properties"] if model is TaskDocument else SCHEMA["$defs"][model.__name__]["properties"]

    for name, info in model.model_fields.items():
        key = info.alias or name
        if name in docstrings:
            assert properties[key].get("description") == docstrings[name], f"{model.__name__}.{name}"
        else:
            assert "description" not in properties[key], f"{model.__name__}.{name} has a description but no docstring"


def test_the_fields_every_step_has_are_documented() -> None:
    documented = attribute_docstrings(StepModel)

    assert {"id", "version", "depends_on", "fail_task_on_error", "retry_config"} <= set(documented)
    assert "Omitted or null: every earlier step. []: none." in documented["depends_on"]
    assert SCHEMA["$defs"]["RetryConfig"]["properties"]["max_retries"]["default"] == 1


def test_the_reference_example_is_valid_against_the_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    steps = json.loads((VALID / "reply-to-dana.json").read_text(encoding="utf-8"))

    jsonschema.validate({"id": "reply-to-dana", "steps": steps}, SCHEMA)


@pytest.mark.parametrize(
    "bad_step",
    [
        {"id": "email", "type": "deploy_en", "env_id": "email"},
        {"id": "email", "type": "deploy_env", "env_id": "email", "env_idd": "email"},
        {"id": "email", "type": "deploy_env"},
        {"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": "start"},
    ],
    ids=["unknown type", "unknown field", "missing required field", "depends_on not a list"],
)
def test_the_schema_rejects_what_validation_rejects(bad_step: dict[str, Any]) -> None:
    jsonschema = pytest.importorskip("jsonschema")

    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"id": "t", "steps": [bad_step]}, SCHEMA)
