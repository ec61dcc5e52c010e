"""The review step's resume form: what a reviewer answers in the Prefect UI."""

from __future__ import annotations

from prefect.input import RunInput
from pydantic import Field


class ReviewDecision(RunInput):
    """What the reviewer answers in the Prefect UI's resume form."""

    approve: bool = Field(description="Approve to let the task go on; leave unticked to reject it.")
    note: str = Field(default="", description="Why: kept in the report under metadata.reviews.")
