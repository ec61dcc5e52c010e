"""Helpers for launcher tests: the fake server's argv and a by-pid "is it gone" check."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

FAKE_SERVER = Path(__file__).with_name("fake_server.py")


def fake_command(mode: str = "ok", *extra: str) -> list[str]:
    """argv template that starts the fake server in ``mode``."""
    return [sys.executable, str(FAKE_SERVER), "--host", "{host}", "--port", "{port}", "--mode", mode, *extra]


def is_gone(pid: int) -> bool:
    """True when no process has ``pid`` (a zombie waiting for a non-reaping init counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def wait_gone(pid: int, timeout: float = 5.0) -> bool:
    """Wait until ``pid`` is gone; False if it is still there after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if is_gone(pid):
            return True
        time.sleep(0.02)
    return is_gone(pid)


def read_pid(path: Path) -> int:
    return int(path.read_text())
