"""Running the CLI as a real child process against the session's Prefect API, and looking for
what a run left behind: processes carrying its run marker, sandboxes, its flow run's states."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from prefect_agentenv.runtime.resources.leftovers import RUN_MARKER

CLI = Path(__file__).with_name("cli_entry.py")


@dataclass
class CliRun:
    """A ``prefect-agentenv run`` started in its own process group."""

    process: subprocess.Popen[str]
    home: Path
    report: Path

    def owner(self, timeout: float = 90.0) -> dict[str, Any]:
        """The run's owner record, once the run has started."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = list((self.home / "runs").glob("*/owner.json"))
            if found:
                return json.loads(found[0].read_text())
            assert self.process.poll() is None, self.process.communicate()
            time.sleep(0.1)
        raise AssertionError("the run never started")

    def wait_for_step(self, pattern: str, timeout: float = 90.0) -> None:
        """Wait until a file matching ``pattern`` exists under the run folder (a step got that far)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if list((self.home / "runs").glob(pattern)):
                return
            assert self.process.poll() is None, self.process.communicate()
            time.sleep(0.1)
        raise AssertionError(f"no {pattern} appeared")

    def finish(self, timeout: float = 90.0) -> tuple[int, str, str]:
        try:
            out, err = self.process.communicate(timeout=timeout)
        finally:
            if self.process.poll() is None:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        return self.process.returncode, out, err


def start_cli(args: list[str], *, home: Path, api_url: str, report: Path) -> CliRun:
    env = {**os.environ, "PREFECT_API_URL": api_url, "PREFECT_AGENTENV_HOME": str(home),
           "PREFECT_AGENTENV_CANCEL_POLL_SECONDS": "0.5", "PREFECT_LOGGING_LEVEL": "WARNING"}
    process = subprocess.Popen([sys.executable, str(CLI), *args, "--report", str(report)], env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    return CliRun(process, home, report)


def marked_processes(run_id: str) -> list[int]:
    """Live processes whose environment carries the run's marker (zombies excluded)."""
    needle = f"{RUN_MARKER}={run_id}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if b"\0" + needle + b"\0" in b"\0" + (entry / "environ").read_bytes() and \
                    (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def wait_until_gone(run_id: str, timeout: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while (left := marked_processes(run_id)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def flow_run_states(api_url: str, flow_run_id: str) -> list[str]:
    response = httpx.get(f"{api_url}/flow_run_states/", params={"flow_run_id": flow_run_id}, timeout=30)
    response.raise_for_status()
    return [s["type"] for s in response.json()]
