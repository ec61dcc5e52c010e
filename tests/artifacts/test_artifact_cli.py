"""``prefect-agentenv artifact put|list|get`` against the local store of a temporary home."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from prefect_agentenv.cli import app

runner = CliRunner()


def invoke(*args: str | Path) -> Result:
    result = runner.invoke(app, ["artifact", *map(str, args)])
    # Our errors end in an exit code; anything else would have printed a traceback.
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


@pytest.fixture
def files(tmp_path: Path) -> Path:
    folder = tmp_path / "input"
    (folder / "charts").mkdir(parents=True)
    (folder / "notes.md").write_text("# notes")
    (folder / "charts" / "q3.png").write_bytes(b"png")
    return folder


def test_put_list_and_get_round_trip_a_file_artifact(agentenv_home: Path, files: Path, tmp_path: Path) -> None:
    put = invoke("put", "report", files / "notes.md", files / "charts")
    assert put.exit_code == 0, put.output
    assert "published report@1 (file artifact, 2 file(s))" in put.output
    assert (agentenv_home / "store").resolve().as_uri() in put.output

    listed = invoke("list")
    assert listed.exit_code == 0, listed.output
    assert "report  latest=1  versions=1" in listed.output

    got = invoke("get", "report@1", tmp_path / "out")
    assert got.exit_code == 0, got.output
    assert (tmp_path / "out" / "notes.md").read_text() == "# notes"
    assert (tmp_path / "out" / "q3.png").read_bytes() == b"png"


def test_put_publishes_environment_artifacts_and_universes(agentenv_home: Path, files: Path, tmp_path: Path) -> None:
    assert invoke("put", "inbox", files / "notes.md", "--environment", "email", "--version", "v1").exit_code == 0
    assert invoke("put", "chart", files / "charts").exit_code == 0
    universe = invoke("put", "handoff", "chart@1", "--universe")
    assert universe.exit_code == 0, universe.output
    assert "published handoff@1 (universe of 1: chart@1)" in universe.output

    versions = invoke("list", "inbox")
    assert "inbox@v1" in versions.output and "environment artifact for 'email'" in versions.output
    assert invoke("get", "handoff", tmp_path / "sandbox").exit_code == 0
    assert (tmp_path / "sandbox" / "q3.png").read_bytes() == b"png"


@pytest.mark.parametrize(("args", "message"), [
    (["get", "ghost", "out"], "artifact 'ghost' is not published"),
    (["get", "../etc@1", "out"], "must stay inside the store"),
    (["list", "ghost"], "artifact 'ghost' is not published"),
    (["put", "notes", "missing.txt"], "missing.txt does not exist"),
    (["put", "bad/id", "{notes}"], "contains '/'"),
    (["put", "inbox", "{notes}", "{notes}", "--environment", "email"], "exactly one file"),
    (["put", "u", "ghost", "--universe"], "artifact 'ghost' is not published"),
    (["put", "notes", "{notes}", "--environment", "email", "--universe"], "exclude each other"),
])
def test_user_mistakes_exit_2_with_one_clear_line(agentenv_home: Path, files: Path, args: list[str],
                                                  message: str) -> None:
    result = invoke(*[a.replace("{notes}", str(files / "notes.md")) for a in args])

    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert result.stderr.startswith("error: ")


def test_republishing_a_version_with_other_content_exits_2(agentenv_home: Path, files: Path) -> None:
    assert invoke("put", "notes", files / "notes.md", "--version", "1").exit_code == 0
    (files / "notes.md").write_text("changed")

    result = invoke("put", "notes", files / "notes.md", "--version", "1")

    assert result.exit_code == 2
    assert "notes@1 is already published (or being published) with other content" in result.stderr


def test_the_installed_command_reports_errors_without_a_traceback(agentenv_home: Path) -> None:
    env = {**os.environ, "PREFECT_AGENTENV_HOME": str(agentenv_home)}
    done = subprocess.run([sys.executable, "-m", "prefect_agentenv.cli", "artifact", "get", "ghost", "out"],
                          capture_output=True, text=True, env=env, timeout=60)

    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "artifact 'ghost' is not published" in done.stderr
