"""A judge setup's fingerprint: what a rubric score's trust in its judge is keyed by.

Calibration against human labels holds for one setup only: the judge models, the prompt they
are given (the package's judge template with the task's grading policy and, in a panel, each
judge's own instructions), the criteria, and how a panel folds its verdicts. Change any of them
and the judge may grade otherwise, so each is hashed and the fingerprint hashes them together.
A rubric verification records its setup as ``judge_setup``; a calibration record is keyed by
``fingerprint``, and a score whose setup has no record, or whose verifier was last calibrated
under another fingerprint, is uncalibrated or stale.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict

from prefect_agentenv.attribute_docs import attribute_docstrings
from prefect_agentenv.grading.judge import OutputFormat, RubricCriterion, judge_template

__all__ = ["MOCK_JUDGE_NOTE", "JudgeIdentity", "JudgeSetup", "SINGLE_JUDGE", "criteria_hash", "judge_setup",
           "mock_judged", "named_judge_models", "prompt_hash"]

SINGLE_JUDGE = "single"
"""The panel rule recorded for a verifier with one judge."""
_HASH_CHARS = 16
_MOCK = "mock"
"""The model name the built-in mock model answers as (``resolution.models.MOCK_MODEL``)."""
MOCK_JUDGE_NOTE = "judged by the mock model: every criterion passes unless scripted"
"""What a score graded by the built-in mock model is shown with, wherever it is shown."""


class JudgeIdentity(BaseModel):
    """One judge of a setup: its id, the model that answered, and the hash of its prompt template."""

    model_config = ConfigDict(frozen=True, json_schema_extra=attribute_docstrings)

    id: str
    """The panel judge's id; ``judge`` for a verifier's only judge."""
    model: str | None
    """The model that judged (``mock``: the built-in mock model)."""
    prompt: str
    """Hash of the judge's prompt template (grading policy and its own instructions included)."""


class JudgeSetup(BaseModel):
    """What a rubric verifier's trust is keyed by (``verification.judge_setup``)."""

    model_config = ConfigDict(frozen=True, json_schema_extra=attribute_docstrings)

    fingerprint: str
    """Hash of everything below: a calibration holds for this value only."""
    judges: list[JudgeIdentity]
    criteria: str
    """Hash of the criteria (ids, texts, weights, in order)."""
    panel_rule: str
    """``majority``, ``unanimous``, ``mean``, or ``single`` for one judge."""

    @property
    def mock(self) -> bool:
        """A judge of the setup is the built-in mock model (its verdicts are scripted, not judged)."""
        return any(j.model == _MOCK for j in self.judges)


def _digest(value: object) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:_HASH_CHARS]


def criteria_hash(criteria: Sequence[RubricCriterion]) -> str:
    """Hash of the criteria a label or a score refers to: a label holds only for the criterion text it was given on."""
    return _digest([{"id": c.id, "criterion": c.criterion, "weight": c.weight} for c in criteria])


def prompt_hash(output_format: OutputFormat, grading_policy: str | None, *, use_trajectory: bool) -> str:
    """Hash of the judge's prompt template: the package's wording, the format and the grading policy."""
    return _digest({"template": judge_template(output_format, grading_policy), "trajectory": use_trajectory})


def judge_setup(judges: Sequence[JudgeIdentity], criteria: Sequence[RubricCriterion],
                panel_rule: str = SINGLE_JUDGE) -> JudgeSetup:
    """The setup of a verifier's judges, with its fingerprint."""
    ids = list(judges)
    crit = criteria_hash(criteria)
    fingerprint = _digest({"judges": [j.model_dump() for j in ids], "criteria": crit, "panel_rule": panel_rule})
    return JudgeSetup(fingerprint=fingerprint, judges=ids, criteria=crit, panel_rule=panel_rule)


def mock_judged(verifications: object) -> bool:
    """Whether any rubric verification of a report's ``verifications`` (as JSON) was graded by the mock model."""
    if not isinstance(verifications, dict):
        return False
    for verification in verifications.values():
        setup = verification.get("judge_setup") if isinstance(verification, dict) else None
        judges = setup.get("judges") if isinstance(setup, dict) else None
        if any(isinstance(j, dict) and j.get("model") == _MOCK for j in judges or []):
            return True
    return False


def named_judge_models(models: Iterable[str]) -> list[str]:
    """Judge models as a reader should see them: the mock model with what its verdicts are worth."""
    return [f"{m} ({MOCK_JUDGE_NOTE})" if m == _MOCK else m for m in models]
