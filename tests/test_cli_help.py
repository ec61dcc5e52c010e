"""Every command's ``--help`` reads right in an 80-column terminal, as a new user first sees it.

Each option is named whole (not cut to ``--require-calib…``), no line runs past 80 columns, help
text keeps its ``[bracketed]`` words, and ``--version`` answers with the package's version.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from importlib.metadata import version
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

import prefect_agentenv
from prefect_agentenv.cli import _SUBGROUPS, app

WIDTH = {"COLUMNS": "80", "TERMINAL_WIDTH": "80"}


def _commands() -> Iterator[tuple[list[str], Any]]:
    root = typer.main.get_command(app)
    for name in _SUBGROUPS:
        root.load(name)  # type: ignore[attr-defined]

    def walk(command: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
        yield path, command
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            yield from walk(sub, [*path, name])

    yield from walk(root, [])


COMMANDS = list(_commands())


def _help(path: list[str]) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], env=WIDTH)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[" ".join(p) or "(root)" for p, _ in COMMANDS])
def test_help_names_every_option_whole_within_80_columns(path: list[str], command: Any) -> None:
    text = _help(path)
    names = [o for p in command.params for o in [*p.opts, *p.secondary_opts] if o.startswith("-")]
    cut = [name for name in names if not re.search(re.escape(name) + r"(?![\w-])", text)]
    assert cut == [], f"`{' '.join(path)} --help` does not show these whole:\n{text}"
    wide = [line for line in text.splitlines() if len(line) > 80]
    assert wide == [], "lines past 80 columns"
    assert "…" not in text


def test_bracketed_words_in_help_are_shown_as_written() -> None:
    text = _help(["rollout"])
    assert "[env.agent]" in " ".join(text.split())


def test_serve_names_every_deployment_it_serves_and_its_schedule_switch() -> None:
    from prefect_agentenv.deployments import build_deployments

    text = _help(["serve"])
    served = [f"{d.flow_name}/{d.name}" for d in build_deployments("examples/benchmark.yaml", cron=None)]
    assert len(served) == 6 and [name for name in served if name not in text] == []
    assert "--no-schedule" in text and "--no-no-schedule" not in text


def test_version_answers_with_the_installed_version() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"prefect-agentenv {version('prefect-agentenv')}\n"
    assert version("prefect-agentenv") == prefect_agentenv.__version__
