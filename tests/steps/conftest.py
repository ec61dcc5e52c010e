"""Fixtures for step tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .helpers import publish_examples


@pytest.fixture
def published(agentenv_home: Path) -> Iterator[Path]:
    """A local store holding the example artifacts."""
    publish_examples()
    yield agentenv_home
