"""What every step model shares: a description on each field (the Run form and the JSON Schema show
it), ``score_aggregator`` declared once with each verifier type's own default, and ``StepError``
naming the step it is given."""

from __future__ import annotations

import inspect
import sys
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from prefect_agentenv.documents import TaskDocument, validate_data
from prefect_agentenv.exceptions import AgentTimeoutError, NotInContextError, StepError
from prefect_agentenv.steps.base import StepModel, VerifierStep
from prefect_agentenv.steps.registry import all_steps

STEP_TYPES = sorted(all_steps())
VERIFIER_TYPES = [t for t in STEP_TYPES if issubclass(all_steps()[t].model, VerifierStep)]
SCHEMA: dict[str, Any] = TaskDocument.model_json_schema()
OWN_DEFAULTS = {"aggregate_verifiers": "weighted_average", "env_state_verifier": "weighted_average",
                "harbor_verifier": "weighted_average"}


def step_definition(step_type: str) -> dict[str, Any]:
    items = SCHEMA["properties"]["steps"]["items"]
    ref = items["discriminator"]["mapping"][step_type]
    return SCHEMA["$defs"][ref.removeprefix("#/$defs/")]


def models_of_step_modules() -> list[type[BaseModel]]:
    """The pydantic models the step modules (built-in and plugins) define: the steps and their items."""
    modules = {all_steps()[t].model.__module__ for t in STEP_TYPES}
    return sorted({obj for name in modules for _, obj in inspect.getmembers(sys.modules[name], inspect.isclass)
                   if issubclass(obj, BaseModel) and obj.__module__ == name}, key=lambda m: m.__qualname__)


@pytest.mark.parametrize("step_type", STEP_TYPES)
def test_every_field_of_every_step_type_has_a_description(step_type: str) -> None:
    properties = step_definition(step_type)["properties"]
    undescribed = sorted(name for name, prop in properties.items() if name != "type" and not prop.get("description"))
    assert not undescribed, f"{step_type}: no description for {', '.join(undescribed)}"


@pytest.mark.parametrize("model", models_of_step_modules(), ids=lambda m: f"{m.__module__}.{m.__qualname__}")
def test_every_field_of_the_models_a_step_module_defines_has_a_description(model: type[BaseModel]) -> None:
    properties = model.model_json_schema()["properties"]
    undescribed = sorted(name for name, prop in properties.items() if name != "type" and not prop.get("description"))
    assert not undescribed, f"{model.__qualname__}: no description for {', '.join(undescribed)}"


def test_score_aggregator_is_declared_once_on_the_verifier_base() -> None:
    declaring = [cls.__qualname__ for t in STEP_TYPES for cls in all_steps()[t].model.__mro__
                 if "score_aggregator" in cls.__dict__.get("__annotations__", {})]
    assert set(declaring) == {"VerifierStep"}


@pytest.mark.parametrize("step_type", VERIFIER_TYPES)
def test_each_verifier_type_shows_its_own_default_aggregator_in_the_schema(step_type: str) -> None:
    model = all_steps()[step_type].model
    expected = model.default_aggregator  # type: ignore[attr-defined]
    prop = step_definition(step_type)["properties"]["score_aggregator"]

    if model.__module__.startswith("prefect_agentenv."):  # the built-in types' defaults, as documented
        assert expected == OWN_DEFAULTS.get(step_type, "all_pass")
    assert model.model_fields["score_aggregator"].default == expected
    assert prop["default"] == expected
    assert set(prop["enum"]) == {"all_pass", "any_pass", "weighted_average"}
    assert "the default depends on the step type" in prop["description"]


@pytest.mark.parametrize("written", [{}, {"score_aggregator": None}], ids=["omitted", "null"])
def test_a_document_that_names_no_aggregator_gets_the_types_default(written: dict[str, Any]) -> None:
    result = validate_data([
        {"id": "env", "type": "deploy_env", "env_id": "records"},
        {"id": "state", "type": "env_state_verifier", "env_id": "records", **written,
         "assertions": [{"assert": "record_count", "id": "one", "resource": "requests", "equals": 1}]},
        {"id": "all", "type": "aggregate_verifiers", "verifier_ids": ["state"], **written},
        {"id": "card", "type": "verify_env_card", "env_id": "records", **written},
    ])
    assert result.ok, result.problems
    assert result.document is not None
    assert [s.score_aggregator for s in result.document.steps[1:]] == [
        "weighted_average", "weighted_average", "all_pass"]


def test_a_document_may_choose_another_aggregator() -> None:
    result = validate_data([
        {"id": "env", "type": "deploy_env", "env_id": "records"},
        {"id": "card", "type": "verify_env_card", "env_id": "records", "score_aggregator": "any_pass"},
    ])
    assert result.ok and result.document is not None
    assert result.document.steps[1].score_aggregator == "any_pass"


class _EagerVerifier(VerifierStep):
    """A plugin verifier built at once (no deferred build), with a default of its own."""

    model_config = {"defer_build": False}
    type: Literal["eager_check"] = "eager_check"
    default_aggregator = "any_pass"


class _OwnFieldVerifier(VerifierStep):
    """A plugin verifier that declares the field itself (as plugins written before the base did)."""

    type: Literal["own_field_check"] = "own_field_check"
    score_aggregator: Literal["all_pass", "any_pass", "weighted_average"] = "weighted_average"
    """Its own."""


def test_a_plugin_verifier_gets_its_default_built_now_or_later_and_may_declare_the_field_itself() -> None:
    eager = _EagerVerifier.model_validate({"id": "e", "type": "eager_check"})
    own = _OwnFieldVerifier.model_validate({"id": "o", "type": "own_field_check"})

    assert eager.score_aggregator == "any_pass"
    assert _EagerVerifier.model_json_schema()["properties"]["score_aggregator"]["default"] == "any_pass"
    assert own.score_aggregator == "weighted_average"


class _Step(StepModel):
    type: Literal["named"] = "named"


def test_a_step_error_given_the_step_names_its_id_and_type() -> None:
    step = _Step(id="fetch")
    error = NotInContextError("Env 'crm' not found in context.deployed_envs", step=step)

    assert (str(error), error.step_id, error.step_type, error.context) == (
        "Env 'crm' not found in context.deployed_envs", "fetch", "named", None)
    assert isinstance(AgentTimeoutError("late", step=step), TimeoutError)
    assert AgentTimeoutError("late", step=step).step_id == "fetch"


def test_a_step_error_may_name_a_step_without_its_model_and_the_explicit_names_win() -> None:
    assert (StepError("x").step_id, StepError("x").step_type) == (None, None)
    error = StepError("x", step=_Step(id="fetch"), step_id="other")
    assert (error.step_id, error.step_type) == ("other", "named")
