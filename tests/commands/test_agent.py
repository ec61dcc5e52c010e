"""``prefect-agentenv agent``: register, list and show, with clear errors and exit code 2 for mistakes."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from prefect_agentenv.cli import app

runner = CliRunner()


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def agent(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["agent", *args])
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def test_a_registered_agent_is_listed_and_shown_with_its_secrets_masked(
        prefect_harness: None, monkeypatch: pytest.MonkeyPatch) -> None:
    name = unique("claude")
    monkeypatch.setenv("AGENT_TOKEN", "from-the-shell")
    code, out = agent("register", name, "--command", "my-agent --host {host} --port {port}",
                      "--version", "1.4.0", "--env", "MODE=test", "--secret-env", "API_KEY=s3cret",
                      "--secret-env", "AGENT_TOKEN", "--startup-timeout", "15", "--card-path", "/card.json",
                      "--description", "A coding agent.")
    assert code == 0, out
    assert f"registered agent {name!r}" in out and "s3cret" not in out

    live = unique("live")
    assert agent("register", live, "--url", "https://agent.example.com")[0] == 0
    code, out = agent("list")
    assert code == 0, out
    assert "warning" not in out
    lines = out.splitlines()
    assert any(line.startswith(live) and "url https://agent.example.com" in line for line in lines)
    row = next(line for line in lines if line.startswith(name))
    assert "block" in row and "1.4.0" in row and "my-agent --host {host}" in row
    assert any(line.startswith("scripted") and "reference" in line for line in lines)

    code, out = agent("show", name)
    assert code == 0, out
    assert "source: block" in out and "version: 1.4.0" in out and "description: A coding agent." in out
    assert "command: my-agent --host {host} --port {port}" in out
    assert "card_path: /card.json" in out
    assert "MODE=test" in out and "API_KEY=********" in out and "AGENT_TOKEN=********" in out
    assert "s3cret" not in out and "from-the-shell" not in out

    code, out = agent("show", name, "--json")
    view = json.loads(out)
    assert view["secret_env"] == {"API_KEY": "********", "AGENT_TOKEN": "********"}
    assert view["startup_timeout_seconds"] == 15 and view["card_path"] == "/card.json"


def test_registering_a_name_twice_needs_overwrite(prefect_harness: None) -> None:
    name = unique("dup")
    assert agent("register", name, "--url", "https://one.example.com")[0] == 0
    code, out = agent("register", name, "--url", "https://two.example.com")
    assert code == 2 and "agent" in out and "--overwrite" in out
    assert agent("register", name, "--url", "https://two.example.com", "--overwrite")[0] == 0
    assert "url: https://two.example.com" in agent("show", name)[1]


def test_an_image_agent_is_registered_with_its_container_port(prefect_harness: None) -> None:
    name = unique("boxed")
    assert agent("register", name, "--image", "agents/claude:1", "--container-port", "9000")[0] == 0
    view = json.loads(agent("show", name, "--json")[1])
    assert view["image"] == "agents/claude:1" and view["container_port"] == 9000
    assert view["card_path"] == "/.well-known/agent-card.json"


def test_a_reference_agent_is_shown_as_such(prefect_harness: None) -> None:
    code, out = agent("show", "scripted")
    assert code == 0, out
    assert "source: reference" in out and "prefect_agentenv.agents.scripted" in out
    assert "card_path: /.well-known/agent-card.json" in out


def test_showing_an_unknown_agent_exits_2_with_how_to_register_it(prefect_harness: None) -> None:
    code, out = agent("show", "no-such-agent")
    assert code == 2
    assert "prefect-agentenv agent register no-such-agent --command" in out
    assert "reference agents:" in out and "scripted" in out


@pytest.mark.parametrize(("args", "message"), [
    (["Bad_Name", "--url", "https://x.example.com"], "cannot name an agent"),
    (["ok-name"], "give exactly one of --command, --image or --url"),
    (["ok-name", "--url", "https://x", "--image", "img"], "(got --image, --url)"),
    (["ok-name", "--command", "my-agent --port 8000"], "--command must contain {port}"),
    (["ok-name", "--command", "my-agent 'oops"], "--command cannot be split"),
    (["ok-name", "--url", "agent.example.com"], "--url must start with http"),
    (["ok-name", "--url", "https://x", "--env", "NOVALUE"], "--env expects KEY=VALUE"),
    (["ok-name", "--url", "https://x", "--secret-env", "UNSET_AGENTENV_TEST_VAR"], "is not set"),
    (["ok-name", "--url", "https://x", "--card-path", "card.json"], "--card-path must start with /"),
])
def test_register_mistakes_exit_2_with_a_clear_message(args: list[str], message: str) -> None:
    code, out = agent("register", *args)
    assert code == 2
    assert message in out


def test_a_widened_network_is_registered_on_the_block(prefect_harness: None) -> None:
    allowed, public = unique("allowed"), unique("public")
    assert agent("register", allowed, "--command", "my-agent --port {port}", "--network", "127.0.0.1:9000",
                 "--network", "localhost:9001")[0] == 0
    assert agent("register", public, "--command", "my-agent --port {port}", "--network", "public")[0] == 0

    assert json.loads(agent("show", allowed, "--json")[1])["network"] == {"allow": ["127.0.0.1:9000", "localhost:9001"]}
    assert json.loads(agent("show", public, "--json")[1])["network"] == "public"


@pytest.mark.parametrize(("network", "message"), [
    (["public", "127.0.0.1:9000"], "give it alone"), (["127.0.0.1"], "is not host:port")])
def test_a_network_widening_that_cannot_be_read_exits_2(network: list[str], message: str) -> None:
    args = [arg for value in network for arg in ("--network", value)]
    code, out = agent("register", unique("net"), "--command", "my-agent --port {port}", *args)
    assert code == 2 and message in out, out


def test_show_and_list_say_how_an_agent_runs_defaults_included(prefect_harness: None) -> None:
    plain, tight, loose = unique("plain"), unique("tight"), unique("loose")
    assert agent("register", plain, "--command", "my-agent --port {port}")[0] == 0
    assert agent("register", tight, "--command", "my-agent --port {port}", "--install-path", "/opt",
                 "--network", "127.0.0.1:9000")[0] == 0
    assert agent("register", loose, "--command", "my-agent --port {port}", "--confinement", "none")[0] == 0

    view = json.loads(agent("show", plain, "--json")[1])
    assert view["confinement"] == "confined (default)" and view["install_paths"] == []
    assert view["network"] == "its model and its envs' MCP paths (default)"
    assert view["limits"] == {"memory_limit_mb": "8192 (default)", "process_limit": "1024 (default)",
                              "cpu_limit_seconds": "7200 (default)", "disk_limit_mb": "10240 (default)"}
    view = json.loads(agent("show", tight, "--json")[1])
    assert view["install_paths"] == ["/opt"] and view["network"] == {"allow": ["127.0.0.1:9000"]}
    assert json.loads(agent("show", loose, "--json")[1])["confinement"] == "none (confinement: none)"
    code, out = agent("show", plain)
    assert "confinement: confined (default)" in out and "memory_limit_mb=8192 (default)" in out, out

    rows = {line.split()[0]: line for line in agent("list")[1].splitlines() if line.strip()}
    assert rows[plain].endswith("[confined (default)]"), rows[plain]
    assert rows[tight].endswith("[confined (default); network allow 127.0.0.1:9000; install /opt]"), rows[tight]
    assert rows[loose].endswith("[none (confinement: none)]"), rows[loose]
    assert rows["scripted"].endswith("[confined (default)]"), rows["scripted"]


def test_a_registered_agent_is_removed_by_name_and_an_unknown_one_exits_2(prefect_harness: None) -> None:
    name = unique("gone")
    assert agent("register", name, "--url", "https://gone.example.com")[0] == 0
    code, out = agent("remove", name)
    assert code == 0 and f"removed agent {name!r}" in out, out
    assert agent("show", name)[0] == 2
    code, out = agent("remove", name)
    assert code == 2 and "is not registered" in out, out
    code, out = agent("remove", "scripted")
    assert code == 2 and "reference agent" in out, out


def test_a_relative_script_and_a_shim_are_resolved_at_registration_and_shown(
        prefect_harness: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "plain_agent.py").write_text("print('an agent')\n")
    monkeypatch.chdir(tmp_path)
    name = unique("plain")
    code, out = agent("register", name, "--command", "python plain_agent.py --host {host} --port {port}")
    assert code == 0, out
    assert f"resolved plain_agent.py → {tmp_path / 'plain_agent.py'}" in out, out
    command = json.loads(agent("show", name, "--json")[1])["command"]
    assert command[1:] == [str(tmp_path / "plain_agent.py"), "--host", "{host}", "--port", "{port}"]
    found = shutil.which("python")
    if found is not None and "/shims/" in found:
        assert "/shims/" not in command[0] and os.path.isabs(command[0]), command
        assert f"(what the pyenv shim {found} runs here)" in out, out
