"""The steering tests' fixtures: the CLI's environment, and ``bench`` started in a process of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .helpers import logs


@pytest.fixture
def cli_env(agentenv_home: Path) -> dict[str, str]:
    from prefect.settings import get_current_settings

    return {**os.environ, "PREFECT_API_URL": get_current_settings().api.url or "",
            "PREFECT_AGENTENV_HOME": str(agentenv_home), "COLUMNS": "160"}


@pytest.fixture
def bench_process(tmp_path: Path, cli_env: dict[str, str]) -> Iterator[Any]:
    """Start ``bench`` on a benchmark file in its own process; stopped by its handle if the test fails."""
    started: list[subprocess.Popen[str]] = []

    def start(path: Path, *args: str) -> subprocess.Popen[str]:
        # Its output goes to a file: a pipe nobody reads fills up and blocks the command.
        log = (tmp_path / f"bench-{len(started)}.log").open("w")
        process = subprocess.Popen([sys.executable, "-m", "prefect_agentenv.cli", "bench", str(path), "--report-dir",
                                    str(tmp_path / "out"), *args], env=cli_env, text=True, stdout=log,
                                   stderr=subprocess.STDOUT)
        log.close()
        logs[process] = Path(log.name)
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=60)
        logs.pop(process, None)
