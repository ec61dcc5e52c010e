"""Codex CLI behind AgentEnv's A2A wrapper, installed by name, runs AgentEnv's own smoke task unchanged."""

from __future__ import annotations

import pytest

from harnesses.conftest import assert_smoke_passed, ensure_installed, run_document, smoke_task

pytestmark = pytest.mark.slow


async def test_the_codex_smoke_task_passes_unchanged_against_the_mock_model(harness_home: object) -> None:
    await ensure_installed("codex")

    report, run_id = await run_document(smoke_task("codex"))

    assert_smoke_passed(report, run_id, "codex")
