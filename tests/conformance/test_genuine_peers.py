"""Tasks run end to end against peers we did not write, registered by command as a user would.

* ``notes-sdk``: an env written with the AgentEnv server SDK (its card says ``required: null``);
* ``sdk-tool-caller``: an agent written with the AgentEnv agent SDK (mcp-config, trajectory,
  staging, and an agent-config that takes ``temperature`` but neither ``system_prompt`` nor ``model``);
* ``plain-a2a``: an A2A 1.0 agent on a2a-sdk's own server classes, declaring no extension;
* ``calculator-mcp``: an MCP server from the ``mcp`` package (FastMCP 1.x), with no card and no
  data plane.

The agents' behaviour is scripted in their own files under ``tests/peers/`` (no hosted model);
every protocol exchange is the SDKs' own. After each run, nothing it deployed still answers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.engine.submission_record import StoredSubmission
from prefect_agentenv.results.task_report import TaskReport
from steps.helpers import run_doc, states

pytestmark = pytest.mark.usefixtures("genuine_peers")


def assert_nothing_left_running(report: TaskReport) -> None:
    """Every env and agent the run deployed is stopped: its port refuses connections."""
    context = report.context
    urls = [e.base_url for e in context.deployed_envs.values()]
    urls += [a.a2a_url for a in context.deployed_agents.values()]
    assert urls
    for url in urls:
        with pytest.raises(httpx.ConnectError):
            httpx.get(url, timeout=2.0)
    assert report.teardown and all(entry.ok for entry in report.teardown), report.teardown


def rows(report: TaskReport) -> set[tuple[str, str]]:
    return {(r.agent_name, r.field) for r in report.context.metadata.unsupported_agent_config}


async def test_an_sdk_env_and_an_sdk_agent_run_a_seeded_task_to_passed(agentenv_home: Path, tmp_path: Path) -> None:
    seed = tmp_path / "notes.json"
    seed.write_text(json.dumps({"notes": [{"id": "n-1", "text": "call Dana"}]}))
    with get_artifact_store() as store:
        store.publish_environment("notes-seed", "notes-sdk", "notes.json", seed)
    steps: list[dict[str, Any]] = [
        {"id": "env", "type": "deploy_env", "env_id": "notes-sdk"},
        {"id": "seed", "type": "load_artifact", "env_id": "notes-sdk", "artifact_id": "notes-seed"},
        {"id": "agent", "type": "deploy_agent", "a2a_agent_id": "sdk-tool-caller", "agent_name": "caller",
         "env_ids": ["notes-sdk"], "system_prompt": "Be brief.", "agent_config": {"temperature": 0.5}},
        {"id": "ask", "type": "prompt_agent", "agent_name": "caller", "prompt_id": "ask",
         "prompt": 'add_note {"text": "buy milk"}', "timeout_seconds": 60, "poll_interval_seconds": 0.1},
        {"id": "reply", "type": "agent_prompt_response_verifier", "prompt_id": "ask", "verifier_id": "reply",
         "response_contains": ["add_note -> n-2 (temperature 0.5)"]},
        {"id": "state", "type": "env_state_verifier", "env_id": "notes-sdk", "verifier_id": "state", "assertions": [
            {"assert": "record_count", "id": "two_notes", "resource": "notes", "equals": 2},
            {"assert": "state_match", "id": "milk", "correlate_by": {"resource": "notes", "key": "id", "value": "n-2"},
             "assertions": [{"path": "text", "expected": "buy milk"}]}]},
    ]

    report = await run_doc(steps, task_id="sdk-peers")

    assert report.outcome == "PASSED", (report.error, states(report))
    assert report.context.prompt_responses["ask"].tool_call_count == 1
    assert report.context.prompt_responses["ask"].trajectory, "the SDK agent's trajectory was stored"
    assert rows(report) == {("caller", "system_prompt")}
    assert any("cannot take system_prompt" in w for w in report.warnings)
    assert_nothing_left_running(report)


async def test_a_plain_a2a_agent_and_an_mcp_only_server_run_in_one_task(agentenv_home: Path) -> None:
    steps: list[dict[str, Any]] = [
        {"id": "env", "type": "deploy_env", "env_id": "calculator-mcp"},
        {"id": "caller", "type": "deploy_agent", "a2a_agent_id": "sdk-tool-caller", "agent_name": "caller",
         "env_ids": ["calculator-mcp"]},
        {"id": "plain", "type": "deploy_agent", "a2a_agent_id": "plain-a2a", "agent_name": "plain",
         "env_ids": ["calculator-mcp"], "system_prompt": "Be kind.", "depends_on": ["env"]},
        {"id": "sum", "type": "prompt_agent", "agent_name": "caller", "prompt_id": "sum",
         "prompt": 'add {"a": 2, "b": 3}', "depends_on": ["caller"], "poll_interval_seconds": 0.1},
        {"id": "hello", "type": "prompt_agent", "agent_name": "plain", "prompt_id": "hello", "prompt": "hello",
         "depends_on": ["plain"], "poll_interval_seconds": 0.1},
        {"id": "sum_ok", "type": "agent_prompt_response_verifier", "prompt_id": "sum", "verifier_id": "sum",
         "response_contains": ["add -> 5"], "depends_on": ["sum"]},
        {"id": "hello_ok", "type": "agent_prompt_response_verifier", "prompt_id": "hello", "verifier_id": "hello",
         "response_contains": ["plain agent heard: hello"], "depends_on": ["hello"]},
    ]

    report = await run_doc(steps, task_id="plain-peers")

    assert report.outcome == "PASSED", (report.error, states(report))
    assert set(states(report).values()) == {"completed"}
    assert rows(report) == {("plain", "env_ids.calculator-mcp"), ("plain", "system_prompt")}
    # Neither agent takes a model through agent-config, so the report names none for them.
    assert {a.model for a in report.context.deployed_agents.values()} == {None}
    assert {a.version for a in report.context.deployed_agents.values()} == {"1.0.0"}  # their cards' versions
    (kept,) = [StoredSubmission.model_validate_json(p.read_text()) for p in agentenv_home.rglob("submission.json")]
    assert set(kept.stateless) == {"calculator-mcp"} and not kept.states  # kept all the same, without its state
    assert not any("cannot be rescored" in w for w in report.warnings), report.warnings
    assert_nothing_left_running(report)
