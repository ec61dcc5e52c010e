"""The task document model: an id and a list of steps, each validated by its registered type."""

from __future__ import annotations

import functools
from typing import Annotated, Any, Literal, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    PrivateAttr,
    TypeAdapter,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

from prefect_agentenv.attribute_docs import attribute_docstrings
from prefect_agentenv.documents.scoring import ScoringConfig, apply_skip_defaults, fold_skip_policy, split_for_isolation
from prefect_agentenv.exceptions import ConfigurationError
from prefect_agentenv.gateway.limits import CallLimits
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.steps.base import Identifier, StepModel
from prefect_agentenv.steps.registry import all_steps, get_step, unknown_type_message


def parse_step(value: Any) -> StepModel:
    """Validate one step with the model registered for its ``type``."""
    if isinstance(value, StepModel):
        return value
    if not isinstance(value, dict):
        raise PydanticCustomError("step_not_object", "a step must be an object")
    step_type = value.get("type")
    if not isinstance(step_type, str):
        raise PydanticCustomError("step_type_missing", "a step needs a string 'type'")
    try:
        definition = get_step(step_type)
    except ConfigurationError:
        raise PydanticCustomError("unknown_step_type", unknown_type_message(step_type, list(all_steps()))) from None
    return definition.model.model_validate(value)


def dump_step(step: StepModel) -> JsonObject:
    """The step as JSON: what was written, in this runner's field names, with its type."""
    data = step.model_dump(mode="json", exclude_defaults=True, by_alias=True)
    data["type"] = step.type
    return data


def explain_step(step: StepModel) -> JsonObject:
    """The canonical form of a step as ``validate --explain`` shows it: what was written, in this
    runner's field names, plus the names the step gives or needs even when they were defaults."""
    data = dump_step(step)
    for _, _, loc in [*step.provided(), *step.required()]:
        if loc and loc[0] != "id" and loc[0] not in data:
            data[str(loc[0])] = getattr(step, str(loc[0]))
    return data


class _AnyStepAnnotation:
    """Pydantic type for "a step of any registered type" (plugins included).

    A step is validated by its own type's model (:func:`parse_step`); the union of every step
    model is built only for the JSON Schema, so validating a document builds only the models
    of the step types it uses."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            parse_step, serialization=core_schema.plain_serializer_function_ser_schema(dump_step))

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        return handler(_step_union_schema(tuple(d.model for d in all_steps().values())))


@functools.cache
def _step_union_schema(models: tuple[type[StepModel], ...]) -> core_schema.CoreSchema:
    """The core schema of the union of ``models``, built once per set of step types: a JSON Schema
    of a document asks for it once for every place a step can appear."""
    union: Any = Annotated[Union[models], Field(discriminator="type")] if len(models) > 1 else models[0]  # noqa: UP007
    return TypeAdapter(union).core_schema


AnyStep = Annotated[StepModel, _AnyStepAnnotation]


class TaskDocument(BaseModel):
    """A task: steps wired by depends_on. Written as a JSON/YAML list of steps or {id, steps}."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=attribute_docstrings)

    id: Identifier = "task"
    """Task id (the file name when the document is a bare list)."""
    description: str | None = None
    tags: list[str] = Field(default_factory=list)
    """Labels shown on the flow run."""
    steps: list[AnyStep] = Field(min_length=1)
    """The steps; see each step type's fields."""
    skip_policy: Literal["zero", "exclude"] = "zero"
    """How a skipped verifier (skip_on_truncated / skip_on_timeout) counts in the task score:
    as 0 (``zero``) or not at all (``exclude``)."""
    limits: CallLimits | None = None
    """Limits on the task run's model calls (``tokens``, ``output_tokens``, ``cost_usd``,
    ``model_calls``, ``seconds``), counted by the run's model gateway: once one is reached the next
    call is refused and the prompt it belongs to ends truncated. Overrides ``limit_<name>`` win."""
    scoring: ScoringConfig | None = None
    """Where and how the verifiers run: ``mode`` (``shared``, or ``isolated``: the submission is
    restored into fresh envs and sandboxes first), ``retries``, ``runtime``, ``env``, ``network``;
    ``skip_on_truncated`` / ``skip_on_timeout`` are every verifier's defaults, ``skip_policy``
    the same as the top-level one."""

    @model_validator(mode="after")
    def _fold_scoring(self) -> TaskDocument:
        """scoring.skip_policy is the document's skip_policy; scoring's defaults go onto the verifiers."""
        if self.scoring is None:
            return self
        self.scoring = self.scoring.model_copy(deep=True)  # its skip flags are consumed below
        written = self.skip_policy if "skip_policy" in self.model_fields_set else None
        policy = fold_skip_policy(written, self.scoring)
        if policy is not None:
            self.skip_policy = policy
        self.steps = apply_skip_defaults(self.steps, self.scoring)
        if self.scoring.mode == "isolated":
            try:
                split_for_isolation(self.steps)
            except ValueError as exc:
                raise PydanticCustomError("scoring_isolated_order", "{field}: {why}",
                                          {"field": "scoring.mode", "why": str(exc)}) from None
        return self

    _graph_checked: bool = PrivateAttr(default=False)
    """Set by ``validate_data`` once the whole document (the graph too) passed, so a flow handed this
    very document by the command that validated it does not check it again. Never set from input."""

    @property
    def graph_checked(self) -> bool:
        return self._graph_checked

    def __eq__(self, other: object) -> bool:
        """Documents are equal when they say the same: whether one was already checked is not part of
        what it says (a resumed run compares the frozen copy with the document it was handed)."""
        if not isinstance(other, BaseModel):
            return NotImplemented
        return (type(self) is type(other) and self.__dict__ == other.__dict__
                and self.__pydantic_extra__ == other.__pydantic_extra__)

    def step(self, step_id: str) -> StepModel:
        for s in self.steps:
            if s.id == step_id:
                return s
        raise KeyError(step_id)
