"""``env check`` and ``agent check`` on the genuine peers: what works, what is missing, exit codes."""

from __future__ import annotations

import json

import pytest

from .conftest import ENVS, PEERS, cli

pytestmark = pytest.mark.usefixtures("genuine_peers")
RECORDED = PEERS / "recorded"


def statuses(out: str) -> dict[str, str]:
    return {c["check"]: c["status"] for c in json.loads(out)["checks"]}


def test_env_check_of_the_sdk_env_probes_card_data_plane_tools_and_extensions() -> None:
    code, out = cli("env", "check", "notes-sdk", "--json")

    assert code == 0, out
    view = json.loads(out)
    assert view["ok"] and view["teardown_ok"]
    assert statuses(out) == {"card": "ok", "data/reset": "declared", "data/add": "declared", "data/get": "ok",
                             "mcp tools": "ok", "urn:example:note-stats/v1": "declared"}
    recorded = json.loads((RECORDED / "sdk_env_card.json").read_text())
    assert view["card"] == recorded, "the recorded card is out of date"


def test_env_check_of_an_mcp_only_server_says_it_has_no_card_and_lists_its_tools() -> None:
    code, out = cli("env", "check", "calculator-mcp")

    assert code == 0, out
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("  ")}
    assert "MISSING" in lines["card"] and "plain MCP server" in lines["card"]
    assert "ok" in lines["mcp"] and "add, shout" in lines["mcp"]
    assert "calculator-mcp: ok (lacks: card); stopped (clean)" in out


def test_agent_check_of_a_plain_a2a_agent_lists_every_extension_it_lacks() -> None:
    code, out = cli("agent", "check", "plain-a2a", "--with-env", "calculator-mcp", "--json")

    assert code == 0, out
    assert statuses(out) == {
        "card": "ok", "a2a endpoint": "ok", "message/send + tasks/get": "ok",
        "urn:agentenv:mcp-config/v1": "missing", "urn:agentenv:agent-config/v1": "missing",
        "urn:agentenv:skill-config/v1": "missing", "urn:agentenv:trajectory/v1": "missing"}
    assert [row["field"] for row in json.loads(out)["not_sent"]] == ["env_ids.calculator-mcp"]


def test_agent_check_of_the_sdk_agent_probes_its_declared_extensions() -> None:
    code, out = cli("agent", "check", "sdk-tool-caller", "--with-env", "notes-sdk", "--json")

    assert code == 0, out
    found = statuses(out)
    assert found["message/send + tasks/get"] == "ok" and found["urn:agentenv:mcp-config/v1"] == "ok"
    checks = {c["check"]: c["detail"] for c in json.loads(out)["checks"]}
    assert checks["urn:agentenv:mcp-config/v1"] == "1 MCP server(s) held" and json.loads(out)["not_sent"] == []
    assert found["urn:agentenv:staging/v1"] == "declared"
    assert found["urn:agentenv:agent-config/v1"] == "ok"
    # A task that made no tool call has no trajectory in this SDK: a warning, not a failure.
    assert found["urn:agentenv:trajectory/v1"] in ("ok", "warning")
    recorded = json.loads((RECORDED / "sdk_agent_card.json").read_text())
    assert json.loads(out)["card"]["capabilities"] == recorded["capabilities"], "the recorded card is out of date"


def test_a_peer_that_is_not_an_env_fails_the_env_check_with_exit_1() -> None:
    argv = json.loads(cli("agent", "show", "plain-a2a", "--json")[1])["command"]
    code, out = cli("env", "register", "not-an-env", "--command", " ".join(argv), "--startup-timeout", "3",
                    "--overwrite")
    assert code == 0, out

    code, out = cli("env", "check", "not-an-env")

    assert code == 1, out
    assert "could not be checked" in out and "did not become ready" in out and "stopped (clean)" in out


def test_an_env_whose_declared_data_get_fails_fails_the_check_with_exit_1() -> None:
    command = ENVS["notes-sdk"][0]
    code, out = cli("env", "register", "notes-broken", "--command", command, "--env", "MCP_HOST={host}",
                    "--env", "MCP_PORT={port}", "--env", "NOTES_BROKEN_EXPORT=1", "--overwrite")
    assert code == 0, out

    code, out = cli("env", "check", "notes-broken", "--json")

    assert code == 1, out
    found = statuses(out)
    assert found["data/get"] == "failed" and found["card"] == "ok" and found["mcp tools"] == "ok"
    assert "broken on purpose" in next(c["detail"] for c in json.loads(out)["checks"] if c["check"] == "data/get")


def test_checking_an_unknown_name_exits_2() -> None:
    code, out = cli("agent", "check", "no-such-agent")

    assert code == 2
    assert "prefect-agentenv agent register no-such-agent" in out
