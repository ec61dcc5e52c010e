"""Helpers for step tests: publishing the example artifacts and running documents end to end."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.documents import validate_data
from prefect_agentenv.flows.agent_task import run_task_document
from prefect_agentenv.results.task_report import TaskReport

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def publish_examples() -> None:
    """Publish the example artifacts the step documents use into the configured store."""
    with get_artifact_store() as store:
        store.publish_environment("inbox", "email", "inbox.json", EXAMPLES / "artifacts" / "inbox.json")
        store.publish_environment("clinic", "records", "clinic.json", EXAMPLES / "artifacts" / "clinic.json")
        store.publish_files("verify-delivery", {"verify.py": EXAMPLES / "artifacts" / "verify_delivery.py"})


async def run_doc(steps: list[dict[str, Any]], task_id: str = "t") -> TaskReport:
    result = validate_data(steps, default_id=task_id)
    assert result.ok, [p.render() for p in result.problems]
    assert result.document is not None
    return await run_task_document(result.document, execute_in_prefect=False, publish=False)


def states(report: TaskReport) -> dict[str, str]:
    return {s.id: s.state for s in report.steps}


def is_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False
