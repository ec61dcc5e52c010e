"""Helpers of the fault suite: run a document in this process, publish small verify scripts."""

from __future__ import annotations

import textwrap
from typing import Any

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.documents import validate_data
from prefect_agentenv.flows.agent_task import run_task_document
from prefect_agentenv.results.task_report import TaskReport


async def run_doc(steps: list[dict[str, Any]], task_id: str = "t") -> TaskReport:
    """Validate and run a task document without Prefect task runs (the flow's own code path)."""
    result = validate_data(steps, default_id=task_id)
    assert result.ok, [p.render() for p in result.problems]
    assert result.document is not None
    return await run_task_document(result.document, execute_in_prefect=False, publish=False)


def publish_script(artifact_id: str, source: str) -> None:
    """Store ``source`` as a one-file verify-script artifact."""
    with get_artifact_store() as store:
        store.publish_files(artifact_id, {"verify.py": textwrap.dedent(source).encode()})
