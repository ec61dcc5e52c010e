"""peer_agents and register_agent_triggers against the AgentEnv agent SDK's own extensions.

``sdk-delegator`` (``tests/peers/sdk_delegating_agent.py``) is written with the AgentEnv agent
SDK and declares ``urn:agentenv:peer-agents/v1`` and ``urn:agentenv:triggers/v1``; its peer is ``sdk-tool-caller``, another SDK
agent. After peer_agents gives the delegator its peer, the SDK's own ``peer_send_message`` tool
carries the prompt over A2A. (The SDK's peer tools speak A2A 0.3 — ``message/send`` — so an
A2A 1.0-only peer such as ``plain-a2a`` cannot be reached through them.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conformance.conftest import PEERS, PEERS_PYTHON, cli
from conformance.test_genuine_peers import assert_nothing_left_running
from steps.helpers import run_doc, states

pytestmark = pytest.mark.usefixtures("genuine_peers")


@pytest.fixture(scope="module")
def delegator(genuine_peers: None) -> None:
    code, out = cli("agent", "register", "sdk-delegator", "--command", f"{PEERS_PYTHON} {PEERS / 'sdk_delegating_agent.py'}",
                    "--env", "A2A_HOST={host}", "--env", "A2A_PORT={port}", "--install-path", str(PEERS),
                    "--startup-timeout", "60", "--overwrite")
    assert code == 0, out


async def test_a_peered_sdk_agent_delegates_to_its_peer_through_the_sdks_own_tools(delegator: None, agentenv_home: Path) -> None:
    steps: list[dict[str, Any]] = [
        {"id": "lead", "type": "deploy_agent", "a2a_agent_id": "sdk-delegator", "agent_name": "lead", "depends_on": []},
        {"id": "helper", "type": "deploy_agent", "a2a_agent_id": "sdk-tool-caller", "agent_name": "helper",
         "depends_on": []},
        {"id": "peer", "type": "peer_agents", "peerings": [{"source_agent_name": "lead", "peer_agent_names": ["helper"]}]},
        {"id": "ask", "type": "prompt_agent", "agent_name": "lead", "prompt": "helper: hello", "timeout_seconds": 60,
         "poll_interval_seconds": 0.1},
        {"id": "check", "type": "agent_prompt_response_verifier", "prompt_id": "ask",
         "criteria": [{"type": "response_contains", "needles": ["helper answered:", "I was given no MCP server."]}]},
    ]

    report = await run_doc(steps, task_id="peering")

    assert report.outcome == "PASSED", (report.error, states(report), report.context.prompt_responses)
    assert [p.model_dump() for p in report.context.metadata.agent_peerings] == [{"source_agent_name": "lead", "peer_agent_names": ["helper"]}]
    assert_nothing_left_running(report)


async def test_triggers_are_registered_with_the_sdks_own_trigger_engine(delegator: None, agentenv_home: Path) -> None:
    nudge = {"id": "nudge", "when": {"type": "step", "turn": 1}, "actions": [{"type": "say", "text": "Any news?"}]}
    report = await run_doc([
        {"id": "lead", "type": "deploy_agent", "a2a_agent_id": "sdk-delegator", "agent_name": "lead"},
        {"id": "triggers", "type": "register_agent_triggers", "agent_name": "lead", "triggers": [nudge]},
        {"id": "again", "type": "register_agent_triggers", "agent_name": "lead",
         "triggers": [{**nudge, "actions": [{"type": "say", "text": "Changed"}]}], "fail_task_on_error": False},
    ], task_id="agent-triggers")

    assert states(report)["triggers"] == "completed", report.error
    assert [r.model_dump() for r in report.context.metadata.agent_trigger_registrations] == [
        {"step_id": "triggers", "agent_name": "lead", "added": ["nudge"]}]
    # the SDK refuses a second spec under one id: its answer reaches the report, naming the agent
    [failed] = report.context.metadata.failed_steps
    assert failed.step_id == "again" and "already registered with a different spec" in failed.error


async def test_an_agent_without_the_extensions_is_told_what_it_lacks(delegator: None, agentenv_home: Path) -> None:
    report = await run_doc([
        {"id": "lead", "type": "deploy_agent", "a2a_agent_id": "plain-a2a", "agent_name": "lead", "depends_on": []},
        {"id": "helper", "type": "deploy_agent", "a2a_agent_id": "sdk-delegator", "agent_name": "helper",
         "depends_on": []},
        {"id": "peer", "type": "peer_agents", "peerings": [{"source_agent_name": "lead", "peer_agent_names": ["helper"]}],
         "fail_task_on_error": False},
        {"id": "triggers", "type": "register_agent_triggers", "agent_name": "lead", "depends_on": ["lead"],
         "triggers": [{"id": "t", "when": {"type": "step"}, "actions": [{"type": "say", "text": "hi"}]}],
         "fail_task_on_error": False},
    ], task_id="extensions-refused")

    failed = {f.step_id: f.error for f in report.context.metadata.failed_steps}
    assert "does not declare the urn:agentenv:peer-agents/v1 extension" in failed["peer"]
    assert "does not declare the urn:agentenv:triggers/v1 extension" in failed["triggers"]
