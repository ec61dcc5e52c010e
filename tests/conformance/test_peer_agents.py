"""peer_agents against the AgentEnv agent SDK's own peer-agents extension: a real delegation over A2A.

``sdk-delegator`` (``tests/peers/sdk_delegating_agent.py``) is written with the AgentEnv agent
SDK and declares ``urn:agentenv:peer-agents/v1``; its peer is ``sdk-tool-caller``, another SDK
agent. After peer_agents gives the delegator its peer, the SDK's own ``peer_send_message`` tool
carries the prompt over A2A. (The SDK's peer tools speak A2A 0.3 — ``message/send`` — so an
A2A 1.0-only peer such as ``plain-a2a`` cannot be reached through them.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conformance.conftest import PEERS, PEERS_PYTHON, cli
from steps.helpers import run_doc, states

pytestmark = pytest.mark.usefixtures("genuine_peers")


@pytest.fixture(scope="module")
def delegator(genuine_peers: None) -> None:
    code, out = cli("agent", "register", "sdk-delegator", "--command", f"{PEERS_PYTHON} {PEERS / 'sdk_delegating_agent.py'}",
                    "--env", "A2A_HOST={host}", "--env", "A2A_PORT={port}", "--startup-timeout", "60", "--overwrite")
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

    assert report.outcome == "PASSED", (report.error, states(report), report.context["prompt_responses"])
    assert report.context["metadata"]["agent_peerings"] == [{"source_agent_name": "lead", "peer_agent_names": ["helper"]}]


async def test_peering_an_agent_without_the_extension_names_what_it_lacks(delegator: None, agentenv_home: Path) -> None:
    report = await run_doc([
        {"id": "lead", "type": "deploy_agent", "a2a_agent_id": "plain-a2a", "agent_name": "lead", "depends_on": []},
        {"id": "helper", "type": "deploy_agent", "a2a_agent_id": "sdk-delegator", "agent_name": "helper",
         "depends_on": []},
        {"id": "peer", "type": "peer_agents", "peerings": [{"source_agent_name": "lead", "peer_agent_names": ["helper"]}]},
    ], task_id="peering-refused")

    assert states(report)["peer"] == "failed"
    assert "does not declare the urn:agentenv:peer-agents/v1 extension" in (report.error or "")
