"""``agent install`` and ``agent list`` from the command line, and what a refused package looks like."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnesses.conftest import HARNESS_DIR, ensure_installed
from prefect_agentenv.agents.harnesses import installer
from prefect_agentenv.agents.harnesses.catalog import HARNESSES, NpmCli
from prefect_agentenv.cli import app
from prefect_agentenv.commands._harnesses import listing_rows
from prefect_agentenv.settings import get_settings

pytestmark = pytest.mark.slow


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


def test_naming_no_harness_or_an_unknown_one_is_a_usage_error() -> None:
    assert cli("agent", "install") == (2, "error: name the harnesses to install (opencode, codex, pi, openhands, "
                                          "claude-code, gemini), or give --all\n")
    code, out = cli("agent", "install", "opencode", "cursor")
    assert code == 2 and "no harness called 'cursor'" in out


def test_an_installed_harness_is_left_as_it_is_and_says_its_versions(harness_home: Path) -> None:
    asyncio.run(ensure_installed("opencode"))

    code, out = cli("agent", "install", "opencode")

    assert code == 0, out
    assert "opencode: already installed (1.17.18, agentenv-framework==0.9.1364" in out
    manifest = json.loads((HARNESS_DIR / "opencode" / "manifest.json").read_text())
    assert manifest["cli"] == "opencode-ai@1.17.18" and manifest["framework"] == "agentenv-framework==0.9.1364"


async def test_a_version_the_registry_does_not_have_fails_with_the_registry_s_answer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    locks = tmp_path / "npm" / "pi"
    locks.mkdir(parents=True)
    wanted = {"@earendil-works/pi-coding-agent": "0.0.0-not-published"}
    (locks / "package.json").write_text(json.dumps({"private": True, "dependencies": wanted}))
    (locks / "package-lock.json").write_text(json.dumps({
        "name": "pi-harness", "lockfileVersion": 3, "requires": True,
        "packages": {"": {"dependencies": wanted},
                     "node_modules/@earendil-works/pi-coding-agent": {"version": "0.0.0-not-published"}}}))
    monkeypatch.setattr(installer, "NPM_LOCKS", tmp_path / "npm")
    harness = dataclasses.replace(HARNESSES["pi"], min_node=None,
                                  cli=NpmCli("@earendil-works/pi-coding-agent", "0.0.0-not-published", lockfile="shipped"))

    outcome = await installer.install_one(harness, tmp_path / "harnesses")

    assert outcome.status == "failed" and outcome.manifest is None
    assert outcome.error is not None
    assert "installing @earendil-works/pi-coding-agent@0.0.0-not-published from the npm registry failed" in outcome.error
    assert "the registry's answer" in outcome.error and "0.0.0-not-published" in outcome.error.split("answer")[1]
    assert not (tmp_path / "harnesses" / "pi" / "manifest.json").exists(), "a failed install is never taken as done"


def test_agent_list_shows_each_harness_with_its_versions_or_how_to_install_it(
        harness_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asyncio.run(ensure_installed("opencode"))
    rows = {row[0]: row for row in listing_rows()}

    assert rows["opencode"][1:3] == ("harness", "1.17.18")
    assert "agentenv-framework==0.9.1364" in rows["opencode"][3]
    monkeypatch.setenv("PREFECT_AGENTENV_HARNESS_DIR", str(tmp_path / "empty"))
    get_settings.cache_clear()
    assert {row[1] for row in listing_rows()} == {"harness (not installed)"}
    assert ("gemini", "harness (not installed)", "-", "prefect-agentenv agent install gemini") in listing_rows()
