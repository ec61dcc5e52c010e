"""The local Prefect server of a home: one per home however many start it, used by the commands in
CI only when it already runs, and the demo ending in its UI (a real Chromium finds the benchmark's
flow run, its task runs and their artifacts).

Every test here has a home and a Prefect home of its own (never the developer's), and the module
stops the server it started by the PID its home recorded.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from prefect_agentenv.commands._local_server import LocalServer
from servers import free_port
from viewer.browser import chromium, requires_browser

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "prefect_agentenv.cli"]


@dataclass
class Home:
    """An agentenv home of this module's own, and the environment its commands run with."""

    folder: Path
    env: dict[str, str]

    @property
    def server(self) -> LocalServer:
        return LocalServer(self.folder / "agentenv" / "server")

    def run(self, *args: str, timeout: float = 200, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*CLI, *args], env={**self.env, **extra}, cwd=self.folder, capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Home]:
    folder = tmp_path_factory.mktemp("local-server")
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "CI")}
    env.update(PREFECT_HOME=str(folder / "prefect-home"), PREFECT_AGENTENV_HOME=str(folder / "agentenv"),
               PREFECT_AGENTENV_SERVER="local", PREFECT_AGENTENV_SERVER_PORT=str(free_port()),
               PREFECT_LOGGING_LEVEL="WARNING")
    h = Home(folder, env)
    try:
        yield h
    finally:
        h.server.stop()  # by the PID the home recorded; nothing when a test stopped it already


def test_two_commands_starting_it_at_once_start_one_server(home: Home) -> None:
    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(lambda _: home.run("server", "start"), range(2)))
    assert [d.returncode for d in done] == [0, 0], [d.stderr for d in done]
    pids = {re.search(r"\(pid (\d+)\)", d.stdout).group(1) for d in done}  # type: ignore[union-attr]
    state = home.server.running()
    assert state is not None and pids == {str(state.pid)}
    status = home.run("server", "status")
    assert status.returncode == 0 and f"UI:  http://127.0.0.1:{state.port}" in status.stdout


def test_in_ci_a_command_uses_the_running_server_and_never_starts_one(home: Home, tmp_path: Path) -> None:
    probe = "from prefect_agentenv.commands._prefect_server import use_prefect_server as u; print(u())"
    running = home.server.running() or home.server.ensure()[0]
    used = subprocess.run([sys.executable, "-c", probe], env={**home.env, "PREFECT_AGENTENV_SERVER": "auto",
                                                              "CI": "true"}, capture_output=True, text=True, timeout=120)
    assert used.stdout.strip() == running.api_url, used.stderr
    other = {**home.env, "PREFECT_AGENTENV_SERVER": "auto", "CI": "true", "PREFECT_AGENTENV_HOME": str(tmp_path)}
    fresh = subprocess.run([sys.executable, "-c", probe], env=other, capture_output=True, text=True, timeout=120)
    assert fresh.stdout.strip() == "None" and "using Prefect's temporary server (CI is set" in fresh.stderr
    assert not (tmp_path / "server").exists()


def test_commands_that_only_read_the_store_use_a_running_server_and_never_start_one(home: Home, tmp_path: Path) -> None:
    # compare, view, calibrate and artifact read blocks (an S3 store's) through the API, when there is one.
    probe = ("from prefect_agentenv.commands._prefect_server import use_prefect_server as u; "
             "print(u(running_only=True))")
    running = home.server.running() or home.server.ensure()[0]
    used = subprocess.run([sys.executable, "-c", probe], env=home.env, capture_output=True, text=True, timeout=120)
    assert used.stdout.strip() == running.api_url, used.stderr
    other = {**home.env, "PREFECT_AGENTENV_HOME": str(tmp_path)}  # "local" mode, no server of its own running
    compared = subprocess.run([*CLI, "compare", "no-such-run", "other-run"], env=other, capture_output=True,
                              text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert compared.returncode == 2 and "Traceback" not in compared.stderr, compared.stderr
    assert not (tmp_path / "server").exists(), "compare started no server"


def _one_task_examples(into: Path) -> Path:
    """The demo's example folder with a benchmark of one task (the demo's ending is what is tested)."""
    shutil.copytree(REPO / "examples" / "artifacts", into / "artifacts")
    shutil.copy(REPO / "examples" / "env-roundtrip.json", into)
    (into / "benchmark.yaml").write_text("name: demo ui\nslug: demo-ui\nversion: 1\n"
                                         "tasks:\n  - {id: env-roundtrip, path: env-roundtrip.json}\n")
    return into


@requires_browser
@pytest.mark.slow
def test_the_demo_ends_in_the_ui_with_the_server_left_running_until_stopped(home: Home) -> None:
    examples = _one_task_examples(home.folder / "examples")
    demo = subprocess.run([sys.executable, "-m", "prefect_agentenv.demo", str(examples)], env=home.env,
                          cwd=home.folder, capture_output=True, text=True, timeout=300)
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]
    last = demo.stdout.strip().splitlines()[-3:]
    assert last[0].startswith("HTML report: file://") and last[0].endswith("/reports/html/index.html")
    url = re.match(r"Prefect UI: (\S+/runs/flow-run/[0-9a-f-]{36}) ", last[1])
    assert url is not None, last
    assert last[2].endswith("server stop"), last
    with chromium() as browser:
        _find_the_benchmark_in_the_ui(browser.new_page(viewport={"width": 1400, "height": 1000}), url.group(1))
    state = home.server.running()
    assert state is not None
    stopped = home.run("server", "stop")
    assert stopped.returncode == 0 and f"pid {state.pid}" in stopped.stdout
    assert not Path(f"/proc/{state.pid}").exists() and home.run("server", "status").returncode == 1


def _find_the_benchmark_in_the_ui(page: Any, flow_run_url: str) -> None:
    """The benchmark's flow run, its subflow run with the task's step task runs, and their artifacts."""
    page.goto(flow_run_url)
    page.get_by_text("benchmark", exact=True).first.wait_for(timeout=60_000)
    page.get_by_text("Artifacts", exact=True).first.click()
    page.get_by_text("bench-demo-ui-summary").first.wait_for(timeout=60_000)
    page.get_by_text("Subflow Runs", exact=True).first.click()
    page.get_by_text("8 Task runs").first.wait_for(timeout=60_000)
    page.get_by_text("env-roundtrip · epoch 0").first.click()
    page.get_by_text("agent-task", exact=True).first.wait_for(timeout=60_000)
    page.get_by_text("Task Runs", exact=True).first.click()
    page.get_by_text("snapshot", exact=False).first.wait_for(timeout=60_000)
    page.get_by_text("Artifacts", exact=True).first.click()
    page.get_by_text("agentenv-env-roundtrip-summary").first.wait_for(timeout=60_000)

