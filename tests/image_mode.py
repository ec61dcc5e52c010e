"""What the image-mode tests share: the local test image, the daemon check, and the containers a test left.

`make docker-up` (tests/docker/daemon.sh) starts a docker daemon without a bridge network and builds
the test image from Debian packages; CI runs it before the tests. Without a daemon, or without the
image, the tests that need them are skipped with the reason.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from prefect_agentenv.runtime.launch.docker import server_version

TEST_IMAGE = os.environ.get("AGENTENV_TEST_IMAGE", "agentenv-test/python:bookworm-1")
"""Debian's Python 3.11 with bash and coreutils (the tag tests/docker/daemon.sh builds)."""
ECHO_AGENT = (Path(__file__).parent / "docker" / "echo_agent.py").read_text()
"""An A2A agent on the standard library alone, run in the test image as ``python -c``."""


def skip_reason() -> str | None:
    """Why the image-mode tests cannot run here, or None when a daemon answers and holds the test image."""
    if asyncio.run(server_version()) is None:
        return "no docker daemon answers `docker info` (`make docker-up` starts one)"
    if subprocess.run(["docker", "image", "inspect", TEST_IMAGE], capture_output=True).returncode != 0:
        return f"the test image {TEST_IMAGE} is not built (`make docker-up` builds it)"
    return None


def require_image_mode() -> str:
    """The daemon's version; the test is skipped, with the reason, when image mode cannot run here."""
    reason = skip_reason()
    if reason is not None:
        pytest.skip(reason)
    return asyncio.run(server_version()) or ""


def containers(label: str) -> list[str]:
    """Every container, running or not, that carries ``label`` (``key=value``)."""
    listed = subprocess.run(["docker", "ps", "--all", "--quiet", "--filter", f"label={label}"],
                            capture_output=True, text=True, check=True)
    return listed.stdout.split()


def bridge_network() -> bool:
    """Whether the daemon has a bridge network (else containers run on the host's)."""
    return subprocess.run(["docker", "network", "inspect", "bridge"], capture_output=True).returncode == 0
