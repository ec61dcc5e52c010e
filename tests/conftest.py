"""Shared fixtures: one Prefect test harness per test session, and per-test working folders."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
# The suite never starts or uses the local Prefect server of an agentenv home (the developer's own,
# maybe running): a command a test runs without PREFECT_API_URL gets Prefect's temporary server. A
# test that wants the local server asks for it (PREFECT_AGENTENV_SERVER=local) with a temporary
# home and Prefect home of its own, and stops it by its handle (tests/commands/test_server.py).
os.environ["PREFECT_AGENTENV_SERVER"] = "ephemeral"


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    """A temporary Prefect API for the whole session (it costs ~10 s to start, so only once)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=60):
        yield


@pytest.fixture
def agentenv_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Point the package's working folder (runs, local artifact store) at a temp dir."""
    from prefect_agentenv.settings import get_settings

    home = tmp_path / "agentenv-home"
    monkeypatch.setenv("PREFECT_AGENTENV_HOME", str(home))
    get_settings.cache_clear()
    yield home
    get_settings.cache_clear()


@pytest.fixture(scope="session")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A real task run on a real Prefect server (UI on), shared by the transcript and browser tests."""
    from real_run import prefect_server, run_task

    home = tmp_path_factory.mktemp("real-run")
    with prefect_server(home) as server:
        yield run_task(server, home)


IMAGE_MODE_TESTS = ("test_docker_launcher.py", "test_run_container_unit_tests_verifier.py", "test_image_mode.py")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say why the browser tests or the image-mode tests did not run, so a skip is never silent."""
    from viewer.browser import skip_reason

    reason = skip_reason()
    skipped = terminalreporter.stats.get("skipped", [])
    browser_tests = ("test_browser", "test_the_demo_ends_in_the_ui")
    if reason and any(name in getattr(report, "nodeid", "") for report in skipped for name in browser_tests):
        terminalreporter.write_line(f"browser tests skipped: {reason}")
    image_mode = {report.longrepr[2].removeprefix("Skipped: ") for report in skipped
                  if any(name in getattr(report, "nodeid", "") for name in IMAGE_MODE_TESTS)
                  and isinstance(report.longrepr, tuple)}
    for why in sorted(image_mode):
        terminalreporter.write_line(f"image-mode tests skipped: {why}")
