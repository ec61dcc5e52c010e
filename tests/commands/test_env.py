"""``prefect-agentenv env``: register, list and show, with clear errors and exit code 2 for mistakes."""

from __future__ import annotations

import json
import uuid

import pytest
from typer.testing import CliRunner

from prefect_agentenv.cli import app

runner = CliRunner()


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def env(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["env", *args])
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def test_a_registered_env_is_listed_and_shown_with_its_secrets_masked(
        prefect_harness: None, monkeypatch: pytest.MonkeyPatch) -> None:
    name = unique("mail")
    monkeypatch.setenv("MAIL_TOKEN", "from-the-shell")
    code, out = env("register", name, "--command", "python -m my_env --host {host} --port {port}",
                    "--version", "1.4.0", "--env", "MODE=test", "--secret-env", "API_KEY=s3cret",
                    "--secret-env", "MAIL_TOKEN", "--startup-timeout", "15", "--description", "A mailbox.")
    assert code == 0, out
    assert f"registered env {name!r}" in out and "s3cret" not in out

    live = unique("live")
    assert env("register", live, "--url", "https://live.example.com")[0] == 0
    code, out = env("list")
    assert code == 0, out
    assert "warning" not in out
    assert any(line.startswith(live) and "url https://live.example.com" in line for line in out.splitlines())
    row = next(line for line in out.splitlines() if line.startswith(name))
    assert "block" in row and "1.4.0" in row and "python -m my_env" in row
    assert any(line.startswith("email") and "reference" in line for line in out.splitlines())

    code, out = env("show", name)
    assert code == 0, out
    assert "source: block" in out and "version: 1.4.0" in out
    assert "python -m my_env --host {host} --port {port}" in out  # python: as registration resolved it
    assert "MODE=test" in out and "API_KEY=********" in out and "MAIL_TOKEN=********" in out
    assert "s3cret" not in out and "from-the-shell" not in out

    code, out = env("show", name, "--json")
    view = json.loads(out)
    assert view["secret_env"] == {"API_KEY": "********", "MAIL_TOKEN": "********"}
    assert view["startup_timeout_seconds"] == 15


def test_registering_a_name_twice_needs_overwrite(prefect_harness: None) -> None:
    name = unique("dup")
    assert env("register", name, "--url", "https://one.example.com")[0] == 0
    code, out = env("register", name, "--url", "https://two.example.com")
    assert code == 2 and "--overwrite" in out
    assert env("register", name, "--url", "https://two.example.com", "--overwrite")[0] == 0
    assert "url: https://two.example.com" in env("show", name)[1]


def test_a_reference_env_is_shown_as_such(prefect_harness: None) -> None:
    code, out = env("show", "email")
    assert code == 0, out
    assert "source: reference" in out and "prefect_agentenv.envs.email" in out


def test_showing_an_unknown_env_exits_2_with_how_to_register_it(prefect_harness: None) -> None:
    code, out = env("show", "no-such-env")
    assert code == 2
    assert "prefect-agentenv env register no-such-env --command" in out


@pytest.mark.parametrize(("args", "message"), [
    (["Bad_Name", "--url", "https://x.example.com"], "lowercase letters, digits and dashes"),
    (["ok-name"], "give exactly one of --command, --image or --url"),
    (["ok-name", "--url", "https://x", "--image", "img"], "(got --image, --url)"),
    (["ok-name", "--command", "python -m srv --port 8000"], "--command must contain {port}"),
    (["ok-name", "--command", "python -m 'srv"], "--command cannot be split"),
    (["ok-name", "--url", "env.example.com"], "--url must start with http"),
    (["ok-name", "--url", "https://x", "--env", "NOVALUE"], "--env expects KEY=VALUE"),
    (["ok-name", "--url", "https://x", "--env", "1BAD=v"], "not a valid environment variable name"),
    (["ok-name", "--url", "https://x", "--secret-env", "UNSET_AGENTENV_TEST_VAR"], "is not set"),
])
def test_register_mistakes_exit_2_with_a_clear_message(args: list[str], message: str) -> None:
    code, out = env("register", *args)
    assert code == 2
    assert message in out


def test_a_registered_env_is_removed_by_name_and_an_unknown_one_exits_2(prefect_harness: None) -> None:
    name = unique("gone")
    assert env("register", name, "--url", "https://gone.example.com")[0] == 0
    code, out = env("remove", name)
    assert code == 0 and f"removed env {name!r}" in out, out
    assert env("show", name)[0] == 2
    code, out = env("remove", name)
    assert code == 2 and "is not registered" in out, out
    code, out = env("remove", "email")
    assert code == 2 and "reference env" in out, out
