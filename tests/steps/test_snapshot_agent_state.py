"""snapshot_agent_state: an agent's conversation and workspace kept as a universe another agent can load."""

from __future__ import annotations

import json

import pytest

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.documents import validate_data
from steps.helpers import run_doc, states

pytestmark = pytest.mark.usefixtures("agentenv_home")

PLAN = {"files": [{"path": "/app/artifact/notes.md", "content": "# Notes\n"}], "reply": "I wrote the notes."}


async def test_the_conversation_and_workspace_are_kept_and_load_into_another_agent() -> None:
    report = await run_doc([
        {"id": "writer", "type": "deploy_agent", "a2a_agent_id": "scripted", "agent_name": "writer",
         "agent_config": {"plan": PLAN}},
        {"id": "ask", "type": "prompt_agent", "agent_name": "writer", "prompt": "Write the notes."},
        {"id": "snap", "type": "snapshot_agent_state", "agent_name": "writer", "prompt_id": "ask",
         "artifact_id": "writer-state", "workspace_path": "/app/artifact", "timeout_seconds": 60},
        {"id": "reader", "type": "deploy_agent", "a2a_agent_id": "scripted", "agent_name": "reader"},
        {"id": "restore", "type": "load_artifact", "agent_name": "reader", "artifact_id": "writer-state",
         "destination_path": "/app/restored"},
    ], task_id="agent-snapshot")

    assert set(states(report).values()) == {"completed"}, report.error
    [snapshot] = report.context.metadata.agent_snapshots
    assert snapshot.id == "writer-state" and snapshot.source_agent_name == "writer"
    assert "conversation.json" in snapshot.files and "workspace/notes.md" in snapshot.files
    [loaded] = [u for u in report.context.metadata.loaded_file_artifact_universes if u.step_id == "restore"]
    assert "workspace/notes.md" in loaded.files
    with get_artifact_store() as store:
        meta = store.get_metadata("writer-state--conversation.json")
        turns = json.loads(store.read_file(meta))
    assert turns[0]["reply"] == "I wrote the notes."


def test_a_snapshot_of_a_prompt_no_ancestor_made_is_a_validation_error() -> None:
    result = validate_data([
        {"id": "writer", "type": "deploy_agent", "a2a_agent_id": "scripted"},
        {"id": "snap", "type": "snapshot_agent_state", "prompt_id": "ask", "artifact_id": "x", "depends_on": ["writer"]},
        {"id": "ask", "type": "prompt_agent", "prompt": "hi", "depends_on": ["writer"]},
    ])

    [problem] = result.problems
    assert problem.path == "$[1].prompt_id" and "prompt 'ask' is not provided by any ancestor step" in problem.message
