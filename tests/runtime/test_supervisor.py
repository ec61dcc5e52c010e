"""The supervisor passes on how its command ended, whatever the signal."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import prefect_agentenv.runtime.supervisor as supervisor

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
