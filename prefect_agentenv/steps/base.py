"""The fields every step has, and the markers that tie steps together by name.

A step field annotated with ``Provides("agent")`` puts a name into the run (deploy_agent's
``agent_name``); one annotated with ``Requires("agent")`` needs an ancestor to have put it
there (prompt_agent's ``agent_name``). Validation reads these markers, so a new step type
gets the "no ancestor provides it" check by annotating its fields.

Documents written for the AgentEnv framework use its own field names and forms. Each step model
reads them at load and keeps one canonical form (see :meth:`StepModel.reference_forms`):
``reference_aliases`` renames fields, ``reference_forms`` rewrites values, ``hosted_only``
fields (sizes and lifetimes of AgentEnv's hosted sandboxes) are accepted with a notice, and
``accepted_but_ignored`` fields with a warning. Any other unknown field is still an error.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, cast

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    PrivateAttr,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic.json_schema import JsonSchemaValue

from prefect_agentenv.attribute_docs import attribute_docstrings
from prefect_agentenv.context import Aggregator
from prefect_agentenv.jsontypes import JsonObject, JsonValue

MAX_ID_LENGTH = 128
"""Longest step, task or verifier id: ids appear in file names, task-run names and report tables."""


def _check_identifier(value: str) -> str:
    if not value:
        raise ValueError("must not be empty")
    if len(value) > MAX_ID_LENGTH:
        raise ValueError(f"is {len(value):,} characters long; ids are at most {MAX_ID_LENGTH}")
    if not value.isprintable():
        bad = next(c for c in value if not c.isprintable())
        raise ValueError(f"contains the unprintable character {bad!r}; ids are printable text")
    return value


Identifier = Annotated[str, AfterValidator(_check_identifier),
                       Field(min_length=1, max_length=MAX_ID_LENGTH, pattern=r"^[^\x00-\x1f\x7f]+$")]
"""A printable id of at most ``MAX_ID_LENGTH`` characters (no control characters, no NUL)."""


class FieldError(ValueError):
    """A field's value is wrong, said where and how to fix it.

    Raised in a step model's validator (or its ``reference_forms``), it is reported at ``loc``
    below the value being validated (the step, for a model validator) with ``hint``; a plain
    ``ValueError`` is reported at that value itself.
    """

    def __init__(self, message: str, *, loc: tuple[str | int, ...] = (), hint: str | None = None) -> None:
        super().__init__(message)
        self.loc = loc
        self.hint = hint


def check_sandbox_path(value: str) -> str:
    """A sandbox path as a document writes it: without ``..`` (a run refuses one that leaves the sandbox).

    Checked as written; a ``${VAR}`` in it is resolved when the step starts, and the run checks
    the result again.

    Raises:
        FieldError: the path has a ``..`` segment or a NUL byte.
    """
    if "\0" in value:
        raise FieldError(f"sandbox path {value!r} contains a NUL byte")
    if ".." in value.split("/"):
        raise FieldError(f"sandbox path {value!r} has a '..' segment",
                         hint="name the place directly: an absolute sandbox path such as /app/data/x.csv, "
                              "or a path below the step's base folder")
    return value


SandboxPath = Annotated[str, AfterValidator(check_sandbox_path)]
"""A path in an agent's or a deploy_sandbox sandbox (``/app/...``), without ``..``."""

NameKind = Literal["env", "agent", "prompt", "verifier", "collect", "sandbox"]


@dataclass(frozen=True)
class Provides:
    """Marks a field whose value names something this step adds to the run."""

    kind: NameKind


@dataclass(frozen=True)
class Requires:
    """Marks a field whose value must have been provided by an ancestor step."""

    kind: NameKind


EnvRef = Annotated[str, Requires("env")]
AgentRef = Annotated[str, Requires("agent")]
PromptRef = Annotated[str, Requires("prompt")]
VerifierRef = Annotated[str, Requires("verifier")]
CollectRef = Annotated[str, Requires("collect")]
SandboxRef = Annotated[str, Requires("sandbox")]

DEFAULT_AGENT_NAME = "default-agent"
"""The agent name AgentEnv documents imply when deploy_agent or prompt_agent names none."""


class _Strict(BaseModel):
    # Built on first use: `validate` registers every step type but checks only the ones a document uses.
    model_config = ConfigDict(extra="forbid", json_schema_extra=attribute_docstrings, defer_build=True)


class DependsOnRef(_Strict):
    """A dependency written as an object."""

    task_step_id: str
    """Id of the step this one waits for."""


class RetryConfig(_Strict):
    """How a failing step is retried before it fails the task."""

    retry_from_step_id: str = Field(validation_alias=AliasChoices("retry_from_step_id", "go_to_step_id"))
    """Re-run from this step (the failing step itself or one of its ancestors); AgentEnv also reads go_to_step_id."""
    max_retries: int = Field(default=1, ge=0, le=20)
    """How many times the span is re-run before the failure counts."""
    retry_delay_seconds: float | None = Field(default=None, ge=0, le=3600)
    """Wait before each retry; PREFECT_AGENTENV_RETRY_DELAY_SECONDS when omitted."""


class StepModel(_Strict):
    """Fields shared by every step type."""

    type: str
    id: Identifier
    """Unique id of the step within the task (printable, at most 128 characters)."""
    version: str | None = None
    """Version of what the step names (env, agent, artifact); latest when omitted."""
    depends_on: list[str | DependsOnRef] | None = None
    """Steps to wait for. Omitted or null: every earlier step. []: none."""
    fail_task_on_error: bool = True
    """When false, a failure is recorded in metadata.failed_steps and dependents still run."""
    retry_config: RetryConfig | None = None
    """Re-run a span of steps before a failure counts."""

    accepted_but_ignored: ClassVar[tuple[str, ...]] = ()
    """Fields of the reference model this runner accepts but does not act on (a warning)."""
    hosted_only: ClassVar[tuple[str, ...]] = ()
    """Fields that size or time AgentEnv's hosted sandboxes; accepted with a notice, no effect here."""
    reference_aliases: ClassVar[dict[str, str]] = {}
    """AgentEnv field names read as this model's fields: ``{reference name: field name}``."""
    reference_fields: ClassVar[dict[str, str]] = {}
    """AgentEnv fields that :meth:`reference_forms` rewrites, with how (for the JSON Schema)."""
    reference_alternatives: ClassVar[dict[str, str]] = {}
    """AgentEnv fields that stand in for a required field in another form (``{"criteria": "checks"}``)."""
    schema_optional: ClassVar[tuple[str, ...]] = ()
    """Required fields that :meth:`reference_forms` fills when omitted (the schema does not require them)."""
    artifact_field: ClassVar[str | None] = None
    """The field naming a stored artifact the step reads at ``version`` (the latest when omitted);
    publishing a benchmark pins that version."""
    produces_artifact_field: ClassVar[str | None] = None
    """The field naming an artifact the step publishes a new version of; a benchmark's loads of it
    stay unpinned when published (the run itself makes the version they read)."""

    _ignored_present: list[str] = PrivateAttr(default_factory=list)
    _notices: list[str] = PrivateAttr(default_factory=list)

    @classmethod
    def reference_forms(cls, data: JsonObject, notices: list[str]) -> JsonObject:
        """Rewrite AgentEnv value forms (criteria lists, defaults it implies) into this model's.

        Called at load with the aliases already applied; append to ``notices`` whatever the
        reader should know about the rewrite. Raise ``ValueError`` for a form that cannot be read.
        """
        return data

    @model_validator(mode="wrap")
    @classmethod
    def _read_reference_forms(cls, data: Any, handler: Any) -> Any:
        present: list[str] = []
        notices: list[str] = []
        if isinstance(data, dict):
            data = cls.reference_forms(_apply_aliases(cls, data), notices)
            if isinstance(data.get("version"), int) and not isinstance(data["version"], bool):
                data["version"] = str(data["version"])  # AgentEnv numbers versions
            hosted = [k for k in data if k in cls.hosted_only]
            if hosted:
                notices.append(f"{', '.join(hosted)}: for AgentEnv's hosted sandboxes; accepted, no effect here "
                               "(this runner's sandboxes are local folders and processes)")
            present = [k for k in cls.accepted_but_ignored if k in data]
            data = {k: v for k, v in data.items() if k not in present and k not in hosted}
        model = handler(data)
        model._ignored_present = present
        model._notices = notices
        return model

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        """List accepted-but-ignored fields (editors should not flag them) and require ``type``."""
        schema = handler(core_schema)
        target = handler.resolve_ref_schema(schema)
        props = target.setdefault("properties", {})
        for name in cls.accepted_but_ignored:
            props.setdefault(name, {"description": "Accepted for compatibility; this runner does not act on it."})
        for name in cls.hosted_only:
            props.setdefault(name, {"description": "Sizes or times an AgentEnv hosted sandbox; accepted, no effect."})
        for name, target_name in cls.reference_aliases.items():
            props.setdefault(name, {"description": f"AgentEnv's name for {target_name}."})
        for name, how in cls.reference_fields.items():
            props.setdefault(name, {"description": how})
        _alias_requirements(target, {**cls.reference_aliases, **cls.reference_alternatives}, cls.schema_optional)
        if "type" in props and "type" not in target.get("required", []):
            target.setdefault("required", []).insert(0, "type")
        return schema

    @property
    def ignored_fields(self) -> list[str]:
        """Fields given in the document that this runner does not act on."""
        return list(self._ignored_present)

    @property
    def notices(self) -> list[str]:
        """What the reader of an AgentEnv document should know about how it was read."""
        return list(self._notices)

    def dependency_ids(self) -> list[str] | None:
        """The ids in depends_on, or None when omitted (= every earlier step)."""
        if self.depends_on is None:
            return None
        return [d if isinstance(d, str) else d.task_step_id for d in self.depends_on]

    def provided(self) -> list[tuple[NameKind, str, tuple[str | int, ...]]]:
        """What this step adds to the run, by kind and name."""
        return list(self.names(Provides))

    def required(self) -> list[tuple[NameKind, str, tuple[str | int, ...]]]:
        """What this step needs an ancestor to have added."""
        return list(self.names(Requires))

    def names(self, marker: builtins.type[Provides] | builtins.type[Requires]) -> Iterator[tuple[NameKind, str, tuple[str | int, ...]]]:
        """Yield (kind, name, json path) for every field value carrying the given marker.

        (``builtins.type``: inside this class ``type`` is the step's ``type`` field.)"""
        for field_name, info in type(self).model_fields.items():
            kinds = [m.kind for m in _markers(info.annotation, info.metadata) if isinstance(m, marker)]
            if not kinds:
                continue
            value = getattr(self, field_name)
            if isinstance(value, str):
                yield kinds[0], value, (field_name,)
            elif isinstance(value, list):
                for i, item in enumerate(value):
                    if isinstance(item, str):
                        yield kinds[0], item, (field_name, i)


def _alias_requirements(schema: JsonObject, aliases: dict[str, str], optional: tuple[str, ...]) -> None:
    """A required field with an AgentEnv name may be given under either; one filled at load under neither."""
    listed = schema.get("required")
    required: list[JsonValue] = [r for r in listed if r not in optional] if isinstance(listed, list) else []
    either: list[JsonValue] = []
    for ref_name, name in aliases.items():
        if name in required:
            required.remove(name)
            either.append({"anyOf": [{"required": [name]}, {"required": [ref_name]}]})
    schema["required"] = required
    if either:
        combined = schema.get("allOf")
        schema["allOf"] = (combined if isinstance(combined, list) else []) + either


def _apply_aliases(cls: type[StepModel], data: JsonObject) -> JsonObject:
    """Rename AgentEnv field names to this model's; both names at once is an error."""
    if not cls.reference_aliases:
        return dict(data)
    out = dict(data)
    for ref_name, name in cls.reference_aliases.items():
        if ref_name not in out:
            continue
        if name in out and out[name] != out[ref_name]:
            raise ValueError(f"give {name} or its AgentEnv name {ref_name}, not both")
        out[name] = out.pop(ref_name)
    return out


def listed_field(data: JsonObject, name: str) -> list[JsonValue]:
    """A copy of the list a document gives under ``name`` (none: empty), for a reference form to add to."""
    value = data.get(name)
    if not value:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{name} must be a list")
    return list(value)


def _markers(annotation: Any, metadata: list[Any]) -> list[Any]:
    """Markers on a field, including those inside ``X | None`` and ``list[X]``."""
    found = list(metadata)
    stack = [annotation]
    while stack:
        tp = stack.pop()
        found.extend(getattr(tp, "__metadata__", ()))
        stack.extend(getattr(tp, "__args__", ()) or ())
        origin = getattr(tp, "__origin__", None)
        if origin is not None and hasattr(origin, "__metadata__"):
            stack.append(origin)
    return found


def _verifier_weight(value: float) -> float:
    if value < 0:
        raise FieldError(f"a verifier's weight in the task score cannot be negative (got {value:g})",
                         hint="a penalty is a negative weight on one of its criteria or checks; "
                              "weight 0 records the verifier without counting it")
    return value


class VerifierStep(StepModel):
    """Fields shared by the steps that write metadata.verifications."""

    schema_optional = ("verifier_id",)

    verifier_id: Annotated[Identifier, Provides("verifier")]
    """Key of this verifier's results in metadata.verifications."""
    weight: Annotated[float, AfterValidator(_verifier_weight)] = Field(default=1.0, allow_inf_nan=False,
                                                                      json_schema_extra={"minimum": 0})
    """Weight of this verifier in the task score (0 or more; 0 records it without counting it)."""
    skip_on_truncated: bool = False
    """Do not score when the graded reply was truncated (turn or token cap)."""
    skip_on_timeout: bool = False
    """Do not score when the graded prompt timed out."""
    scoring_env: dict[str, str] = Field(default_factory=dict)
    """Env vars for scoring only (the verify script, the sandbox probes, a judge agent deployed for the
    step); ${VAR} and ${VAR:-default} are resolved when the step starts and never reach a report."""
    score_aggregator: Aggregator = "all_pass"
    """How the rows fold into the verifier's score: all_pass, any_pass or weighted_average
    (docs/scoring.md); the default depends on the step type."""

    default_aggregator: ClassVar[Aggregator] = "all_pass"
    """The ``score_aggregator`` of a step of this type whose document names none (set it on a subclass)."""
    rows_from_output: ClassVar[bool] = False
    """True when the verifier's rows (and so their axes) come from what it runs, not from the document."""
    rescore_unsupported: ClassVar[str | None] = None
    """Why a kept submission cannot be scored again by this verifier (``rescore`` keeps the task run's
    previous result and says so); None: it can."""
    rescore_needs_environment: ClassVar[bool] = False
    """True when a rescore needs a container folder this verifier kept during the run
    (``RunServices.kept_environments``): a run that kept none keeps its previous result, saying why."""

    def rescore_refusal(self) -> str | None:
        """Why this step cannot score a kept submission now (what it grades with is gone or changed
        since the document was frozen), or None; ``rescore`` keeps the previous result and says why."""
        return self.rescore_unsupported

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        """Give ``score_aggregator`` this type's ``default_aggregator``, so the JSON Schema (and the
        Run form) shows each type's own default while the field is declared once, here."""
        super().__pydantic_init_subclass__(**kwargs)
        if "score_aggregator" in cls.__dict__.get("__annotations__", {}):
            return  # the subclass declares the field itself
        if cls.model_fields["score_aggregator"].default == cls.default_aggregator:
            return
        cls.model_fields["score_aggregator"] = FieldInfo.from_annotated_attribute(cast(Any, Aggregator),
                                                                          cls.default_aggregator)
        if cls.__pydantic_complete__:  # built already (a model without defer_build): build it again
            cls.model_rebuild(force=True)

    def declared_axes(self) -> dict[str, float] | None:
        """The axes the document gives this verifier's rows, with the weight of each (``|weight|``
        summed); ``None`` when its rows come from a script. An errored verifier scores 0 on them."""
        if self.rows_from_output:
            return None
        axes: dict[str, float] = {}
        for item, _, weight in self._document_rows():
            axis = getattr(item, "axis", None)
            if isinstance(axis, str) and axis and weight:
                axes[axis] = axes.get(axis, 0.0) + abs(weight)
        return axes

    def _document_rows(self) -> Iterator[tuple[object, tuple[str | int, ...], float]]:
        """Each item of the document that becomes a row (a criterion, a check, an assertion), with
        where it is and its weight (1 when it has none)."""
        for name, value in self.__dict__.items():
            if name in StepModel.model_fields:  # depends_on is a list of models too, and no rows
                continue
            for i, item in enumerate(value if isinstance(value, list) else ()):
                if isinstance(item, BaseModel):
                    weight = getattr(item, "weight", 1.0)
                    if isinstance(weight, int | float) and not isinstance(weight, bool):
                        yield item, (name, i), float(weight)

    @model_validator(mode="after")
    def _rows_can_score(self) -> VerifierStep:
        """Row weights are numbers, and an any_pass verifier has a row that can pass."""
        rows = list(self._document_rows())
        for _, loc, weight in rows:
            if not math.isfinite(weight):
                raise FieldError(f"weight must be a finite number (got {weight})", loc=(*loc, "weight"))
        if self.score_aggregator == "any_pass" and rows and all(w <= 0 for _, _, w in rows) and \
                any(w < 0 for _, _, w in rows):
            raise FieldError("with score_aggregator any_pass and only penalties (negative weights), this verifier "
                             "can never score above 0", loc=("score_aggregator",),
                             hint="give a criterion a positive weight, or use all_pass or weighted_average")
        return self

    @classmethod
    def reference_forms(cls, data: JsonObject, notices: list[str]) -> JsonObject:
        """AgentEnv makes verifier_id optional (ours: the step id) and allows a null aggregator."""
        if data.get("verifier_id") is None and isinstance(data.get("id"), str):
            data["verifier_id"] = data["id"]
        if "score_aggregator" in data and data["score_aggregator"] is None:
            del data["score_aggregator"]
        return data
