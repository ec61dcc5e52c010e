"""Fixtures of the launcher tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """The run folder a launcher writes its logs into."""
    path = tmp_path / "run"
    path.mkdir()
    return path
