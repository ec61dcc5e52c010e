"""modify_env_tool_access against an env written with the AgentEnv server SDK (``tests/peers/sdk_roles_env.py``).

The SDK serves the disable-tool and enable-tool extensions as REST routes advertised on its card;
the step reads the route and verb from the card and records the role's state the env answers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.conftest import PEERS, PEERS_PYTHON, cli
from conformance.test_genuine_peers import assert_nothing_left_running
from steps.helpers import run_doc, states

pytestmark = pytest.mark.usefixtures("genuine_peers")


@pytest.fixture(scope="module")
def desk(genuine_peers: None) -> None:
    code, out = cli("env", "register", "desk", "--command", f"{PEERS_PYTHON} {PEERS / 'sdk_roles_env.py'}",
                    "--env", "MCP_HOST={host}", "--env", "MCP_PORT={port}", "--startup-timeout", "60", "--overwrite")
    assert code == 0, out


async def test_tools_are_switched_off_and_on_for_a_role(desk: None, agentenv_home: Path) -> None:
    report = await run_doc([
        {"id": "env", "type": "deploy_env", "env_id": "desk"},
        {"id": "off", "type": "modify_env_tool_access", "env_id": "desk", "action": "disable", "role": "agent",
         "tools": ["issue_refund"]},
        {"id": "on", "type": "modify_env_tool_access", "env_id": "desk", "action": "enable", "role": "agent",
         "tools": ["issue_refund"]},
    ], task_id="tool-access")

    assert set(states(report).values()) == {"completed"}, report.error
    changes = report.context.metadata.tool_access_changes
    assert [(c.step_id, c.role_state_after.model_dump()) for c in changes] == [
        ("off", {"disabled": ["issue_refund"], "allowed": ["lookup_order"]}),
        ("on", {"disabled": [], "allowed": ["lookup_order", "issue_refund"]}),
    ]
    assert_nothing_left_running(report)


async def test_an_env_without_the_extension_is_a_clear_error(desk: None, agentenv_home: Path) -> None:
    report = await run_doc([
        {"id": "env", "type": "deploy_env", "env_id": "notes-sdk"},
        {"id": "off", "type": "modify_env_tool_access", "env_id": "notes-sdk", "action": "disable", "role": "agent",
         "tools": ["add_note"]},
    ], task_id="tool-access-refused")

    assert states(report)["off"] == "failed"
    assert "does not declare urn:agentenv:disable-tool/v1" in (report.error or "")
