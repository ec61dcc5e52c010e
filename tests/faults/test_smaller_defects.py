"""The smaller defects: a collect step with a bad id stores nothing; a verify script's flood of
output costs bounded memory and still grades."""

from __future__ import annotations

from pathlib import Path

from prefect_agentenv.artifacts import get_artifact_store

from .helpers import publish_script, run_doc

FLOOD = """
import os
async def verify(mcp_url):
    chunk = b"x" * (1024 * 1024) + b"\\n"
    for _ in range(64):
        os.write(1, chunk)
    return [{"id": "still_graded", "result": True}]
"""


async def test_a_collect_step_with_a_bad_id_publishes_nothing(agentenv_home: Path) -> None:
    report = await run_doc([
        {"id": "agent", "type": "deploy_agent", "a2a_agent_id": "scripted", "agent_name": "a", "depends_on": [],
         "agent_config": {"plan": {"reply": "done", "files": [{"path": "/app/artifact/n.md", "content": "hi"}]}}},
        {"id": "ask", "type": "prompt_agent", "agent_name": "a", "prompt_id": "p", "prompt": "write it"},
        {"id": "collect", "type": "collect_artifacts", "agent_name": "a", "base_path": "/app/artifact",
         "artifact_id": "bad/../id"},
    ])
    assert report.status == "failed" and "artifact_id" in (report.error or "")
    with get_artifact_store() as store:
        assert store.list_ids() == []


async def test_a_verify_script_flooding_stdout_is_read_in_bounded_memory(agentenv_home: Path) -> None:
    publish_script("flood", FLOOD)
    report = await run_doc([
        {"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": []},
        {"id": "check", "type": "env_outcome_verifier", "env_id": "email", "verifier_id": "v",
         "script_artifact_id": "flood"},
    ])
    assert report.status == "completed", report.error
    assert report.context.metadata.verifications["v"].score == 1.0
