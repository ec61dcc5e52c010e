"""The supervisor passes on how its command ended, whatever the signal."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import prefect_agentenv.runtime.launch.supervisor as supervisor

from ..launcher_helpers import wait_gone

SCRIPT = Path(supervisor.__file__)


def _supervise(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-I", "-S", str(SCRIPT), str(os.getpid()), "--", *command],
                          capture_output=True, text=True, timeout=30, start_new_session=True)


def test_a_command_killed_by_sigkill_ends_its_supervisor_by_sigkill_without_a_traceback() -> None:
    done = _supervise([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"])
    assert done.returncode == -signal.SIGKILL
    assert "Traceback" not in done.stderr


def test_a_command_ended_by_sigterm_ends_its_supervisor_by_sigterm() -> None:
    done = _supervise([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"])
    assert done.returncode == -signal.SIGTERM
    assert "Traceback" not in done.stderr


def test_an_exit_code_passes_through() -> None:
    assert _supervise([sys.executable, "-c", "raise SystemExit(7)"]).returncode == 7


def test_a_command_with_an_instance_marker_takes_what_it_started_in_a_session_of_its_own_with_it() -> None:
    marker = uuid.uuid4().hex
    escape = ("import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'], "
              "start_new_session=True); print(p.pid, flush=True)")
    env = {**os.environ, "PREFECT_AGENTENV_INSTANCE_ID": marker}
    done = subprocess.run([sys.executable, "-I", "-S", str(SCRIPT), str(os.getpid()), "--", sys.executable, "-c",
                           escape], capture_output=True, text=True, timeout=30, start_new_session=True, env=env)
    escaped = int(done.stdout.split()[0])
    try:
        assert done.returncode == 0, done.stderr
        assert wait_gone(escaped), "the helper that left the group was killed with the command"
    finally:
        if not wait_gone(escaped, timeout=0.1):
            os.kill(escaped, signal.SIGKILL)
