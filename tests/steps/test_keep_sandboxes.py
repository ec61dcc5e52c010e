"""--keep: sandboxes outlive the run (processes never do)."""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx
import pytest

from prefect_agentenv.documents import validate_data
from prefect_agentenv.flows.agent_task import run_task_document

pytestmark = pytest.mark.usefixtures("published")


async def test_keep_leaves_the_sandbox_with_the_agents_files_but_stops_the_agent() -> None:
    doc = validate_data([
        {"id": "agent", "type": "deploy_agent", "a2a_agent_id": "scripted", "agent_name": "writer", "depends_on": [],
         "agent_config": {"plan": {"files": [{"path": "/app/artifact/out.txt", "content": "kept"}]}}},
        {"id": "go", "type": "prompt_agent", "agent_name": "writer", "prompt_id": "go", "prompt": "write"},
    ]).document
    assert doc is not None
    report = await run_task_document(doc, keep=True, execute_in_prefect=False, publish=False)
    agent = report.context.deployed_agents["writer"]
    sandbox = Path(agent.sandbox or "")
    try:
        assert (sandbox / "app" / "artifact" / "out.txt").read_text() == "kept"
        with pytest.raises(httpx.TransportError):
            httpx.get(agent.a2a_url + "/.well-known/agent-card.json", timeout=2)
    finally:
        shutil.rmtree(sandbox, ignore_errors=True)
