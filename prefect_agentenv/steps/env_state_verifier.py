"""env_state_verifier: typed assertions against an env's exported state (data/get)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from prefect_agentenv.steps.base import Aggregator, EnvRef, VerifierStep
from prefect_agentenv.steps.registry import StepDefinition


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class CorrelateBy(_Strict):
    """Which record of which resource an assertion is about."""

    resource: str
    """Resource (collection) name in the exported state, e.g. referrals."""
    key: str
    """Field identifying the record, e.g. request_id."""
    value: Any = None
    """The key's value; when omitted every record of the resource must match."""


class PathAssertion(_Strict):
    """A field of the correlated record."""

    path: str
    """Dotted path inside the record."""
    expected: Any = None
    not_expected: Any = None
    exists: bool | None = None


class StateMatch(_Strict):
    assert_: Literal["state_match"] = Field(alias="assert")
    id: str
    correlate_by: CorrelateBy
    assertions: list[PathAssertion] = Field(min_length=1)
    weight: float = 1.0


class RecordCount(_Strict):
    assert_: Literal["record_count"] = Field(alias="assert")
    id: str
    resource: str
    where: dict[str, Any] = Field(default_factory=dict)
    """Only records whose fields equal these values are counted."""
    equals: int | None = None
    at_least: int | None = None
    at_most: int | None = None
    weight: float = 1.0


class FilePresent(_Strict):
    assert_: Literal["file_present"] = Field(alias="assert")
    id: str
    resource: str = "files"
    name: str
    """File name expected in the env's exported files."""
    contains: str | None = None
    weight: float = 1.0


StateAssertion = Annotated[StateMatch | RecordCount | FilePresent, Field(discriminator="assert_")]


class EnvStateVerifierStep(VerifierStep):
    """Checks an env's exported state with typed assertions, keeping expected vs actual as evidence."""

    type: Literal["env_state_verifier"] = "env_state_verifier"
    env_id: EnvRef
    """The deployed env whose state is exported and checked."""
    assertions: list[StateAssertion] = Field(min_length=1)
    score_aggregator: Aggregator = "weighted_average"


definition = StepDefinition(EnvStateVerifierStep)
