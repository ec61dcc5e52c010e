"""pi behind AgentEnv's A2A wrapper, installed by name, runs AgentEnv's own smoke task unchanged."""

from __future__ import annotations

import pytest

from harnesses.conftest import assert_smoke_passed, ensure_installed, run_document, smoke_task

pytestmark = pytest.mark.slow


async def test_the_pi_smoke_task_passes_unchanged_against_the_mock_model(harness_home: object) -> None:
    await ensure_installed("pi")

    report, run_id = await run_document(smoke_task("pi"))

    assert_smoke_passed(report, run_id, "pi")


async def test_a_token_limit_truncates_pi_mid_task_and_the_gateway_refuses_its_next_call(harness_home: object) -> None:
    # The smoke task needs two model calls (run the command, then answer); the limit lets one through.
    await ensure_installed("pi")

    report, run_id = await run_document(smoke_task("pi"), overrides={"limit_model_calls": "1"})

    prompt = report.context.prompt_responses["ask"]
    assert prompt.is_truncated and prompt.limit == "model_calls" and prompt.error is None
    assert report.status == "completed" and report.outcome != "PASSED", "cut short, so its check fails"
    calls = report.model_calls
    assert calls is not None
    assert calls.by_role["agent"].refused >= 1 and calls.by_role["agent"].limit_reached == "model_calls"
    refused = [call for call in calls.calls if call.failure == "limit"]
    assert refused and all(call.status == 400 for call in refused)
