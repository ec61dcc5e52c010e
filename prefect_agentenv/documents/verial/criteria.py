"""The criteria of a Verial-style task: one observable outcome each, checked by one typed assertion.

An assertion reads the env's state (a record matches, a count, a file, a call transcript, a
fax), or is graded by a judge (a rubric), or reads the agent's reply. Compiling a task
(:mod:`prefect_agentenv.documents.verial.compile`) turns each kind into its verifier step.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from prefect_agentenv.attribute_docs import attribute_docstrings
from prefect_agentenv.documents.loading import NAME_PATTERN
from prefect_agentenv.grading.assertions import (
    CANONICAL_ASSERT,
    FaxContent,
    FilePresent,
    RecordCount,
    StateMatch,
    VoiceTranscript,
    assert_kind,
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=attribute_docstrings)


class _EnvScoped(_Strict):
    env_id: str | None = None
    """The env whose state is checked; required when the task has several envs."""


class StateMatchCheck(_EnvScoped, StateMatch):
    """state_match as a criterion: the id, weight, label and axis come from the criterion."""

    id: str | None = None  # type: ignore[assignment]


class RecordCountCheck(_EnvScoped, RecordCount):
    """record_count as a criterion: the id, weight, label and axis come from the criterion."""

    id: str | None = None  # type: ignore[assignment]


class FilePresentCheck(_EnvScoped, FilePresent):
    """file_present as a criterion: the id, weight, label and axis come from the criterion."""

    id: str | None = None  # type: ignore[assignment]


class VoiceTranscriptCheck(_EnvScoped, VoiceTranscript):
    """voice_transcript as a criterion: a call's transcript says every phrase."""

    id: str | None = None  # type: ignore[assignment]


class FaxContentCheck(_EnvScoped, FaxContent):
    """fax_content as a criterion: an outbound fax carries every phrase."""

    id: str | None = None  # type: ignore[assignment]


class RubricCheck(_Strict):
    """Graded by a judge reading the agent's reply and trajectory."""

    assert_: Annotated[Literal["rubric"], CANONICAL_ASSERT] = Field(alias="assert")
    criterion: str = Field(min_length=1)
    """What must be true, in plain language."""


class ResponseContainsCheck(_Strict):
    """The agent's final reply must contain every needle."""

    assert_: Annotated[Literal["response_contains"], CANONICAL_ASSERT] = Field(alias="assert")
    needles: list[str] = Field(min_length=1)
    """Substrings that must all appear in the reply."""
    case_sensitive: bool = False


StateCheck = StateMatchCheck | RecordCountCheck | FilePresentCheck | VoiceTranscriptCheck | FaxContentCheck
ASSERT_KINDS = ("state_match", "record_count", "file_present", "voice_transcript", "fax_content", "rubric",
                "response_contains")
"""The values of a criterion assertion's ``assert`` (hyphenated spellings and aliases such as
``portal-state-match`` are accepted too)."""
CriterionAssertion = Annotated[
    Annotated[StateMatchCheck, Tag("state_match")] | Annotated[RecordCountCheck, Tag("record_count")]
    | Annotated[FilePresentCheck, Tag("file_present")] | Annotated[VoiceTranscriptCheck, Tag("voice_transcript")]
    | Annotated[FaxContentCheck, Tag("fax_content")] | Annotated[RubricCheck, Tag("rubric")]
    | Annotated[ResponseContainsCheck, Tag("response_contains")],
    Discriminator(assert_kind),
]


class TaskCriterion(_Strict):
    """One observable outcome, scored independently and rolled up into the task score."""

    id: str | None = Field(default=None, pattern=NAME_PATTERN)
    """Row id in the verification; the label in snake_case when omitted."""
    task_id: str | None = None
    """Accepted as Verial's criteria API writes it; the criterion belongs to the task it is in."""
    label: str = Field(min_length=1)
    """What the criterion checks, for people reading the results."""
    weight: float = 1.0
    """Weight in the task score; a negative weight is a penalty."""
    axis: str | None = None
    """Reporting axis (correctness, communication, safety…); per-axis scores are averaged by it."""
    input_entity_id: str | None = None
    """Scopes the assertion to this entity: a state_match's correlate_by.value defaults to the
    entity's field named by correlate_by.key; a voice_transcript or fax_content only reads the
    calls or faxes about the entity's patient_id."""
    assertion: CriterionAssertion
