"""Who judged a rubric, read back from a verification as models, never as dicts.

The rubrics_verifier step keeps three records beside a verification's rows: ``judge`` (a single
judge's :class:`~prefect_agentenv.grading.panel.JudgeRecord`), ``panel`` (a panel's
:class:`~prefect_agentenv.grading.panel.PanelRecord`) and, on each combined row of a panel,
``judges`` (every :class:`~prefect_agentenv.grading.panel.JudgeVerdict`). Reports, transcripts,
calibration and the results store read them here. A record written by another version reads
liberally: a key it lacks takes its default, and one that cannot be read at all reads as absent.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from prefect_agentenv.context import Verification, VerificationRow
from prefect_agentenv.grading.panel import JudgeRecord, JudgeVerdict, PanelRecord

__all__ = ["judge_of", "panel_of", "verdicts_of"]


def _extra(item: Verification | VerificationRow, key: str) -> Any:
    return (item.model_extra or {}).get(key)


def judge_of(verification: Verification) -> JudgeRecord | None:
    """The single judge that graded a rubric verification; None for a panel or another verifier."""
    raw = _extra(verification, "judge")
    try:
        return JudgeRecord.model_validate(raw) if isinstance(raw, dict) else None
    except ValidationError:
        return None


def panel_of(verification: Verification) -> PanelRecord | None:
    """The panel record of a rubric verification graded by a panel; None otherwise."""
    raw = _extra(verification, "panel")
    try:
        return PanelRecord.model_validate(raw) if isinstance(raw, dict) else None
    except ValidationError:
        return None


def verdicts_of(row: VerificationRow) -> list[JudgeVerdict] | None:
    """Every panel judge's verdict on a combined row (the unreadable ones left out); None for a
    row no panel combined."""
    raw = _extra(row, "judges")
    if not isinstance(raw, list):
        return None
    verdicts = []
    for item in raw:
        try:
            verdicts.append(JudgeVerdict.model_validate(item))
        except ValidationError:
            continue
    return verdicts
