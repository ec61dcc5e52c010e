"""Claude Code behind AgentEnv's A2A wrapper, installed by name, runs AgentEnv's own smoke task unchanged."""

from __future__ import annotations

import pytest

from harnesses.conftest import assert_smoke_passed, ensure_installed, run_document, smoke_task

pytestmark = pytest.mark.slow


async def test_the_claude_code_smoke_task_passes_unchanged_against_the_mock_model(harness_home: object) -> None:
    await ensure_installed("claude-code")

    report, run_id = await run_document(smoke_task("claude-code"))

    assert_smoke_passed(report, run_id, "claude-code")
