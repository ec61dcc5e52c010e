"""Fixtures of the fault suite: a local store per test, with the example artifacts published."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from prefect_agentenv.artifacts import get_artifact_store

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def api_url(prefect_harness: None) -> str:
    """The session's Prefect API (``http://127.0.0.1:PORT/api``)."""
    from prefect.settings import get_current_settings

    url = get_current_settings().api.url
    assert url
    return url


@pytest.fixture
def store_home(agentenv_home: Path) -> Iterator[Path]:
    """A local artifact store holding the example verify script and inbox."""
    with get_artifact_store() as store:
        store.publish_environment("inbox", "email", "inbox.json", EXAMPLES / "artifacts" / "inbox.json")
        store.publish_files("verify-delivery", {"verify.py": EXAMPLES / "artifacts" / "verify_delivery.py"})
    yield agentenv_home
