"""Paths and the `prefect` command line, shared by the deployment tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def prefect_cli(env: dict[str, str], *args: str, stdin: str | None = None,
                cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run the `prefect` command line against the test server."""
    return subprocess.run([str(BIN / "prefect"), *args], env=env, input=stdin, capture_output=True, text=True,
                          timeout=300, cwd=cwd)
