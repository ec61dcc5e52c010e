"""Codex CLI on a Harbor task, on the mock model: its shell tool acts inside the task's environment
(harnesses/harbor_trial.py says what is asserted). Needs the local docker daemon (`make docker-up`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnesses.conftest import ROOT, ensure_installed, marked_processes, run_document
from harnesses.harbor_trial import assert_shell_acts_in_the_environment, containers_of, environment_of_its_shell

pytestmark = pytest.mark.slow


async def test_codex_runs_its_shell_inside_the_task_environment(harness_home: object, daemon: None) -> None:
    await assert_shell_acts_in_the_environment("codex")


async def test_its_shell_sees_the_environments_variables_not_the_runners_nor_its_own(
        harness_home: object, daemon: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "runner-secret-f00d")

    seen = await environment_of_its_shell("codex", tmp_path)

    assert "PWD=/app" in seen and "HOSTNAME=" in seen, ("the container's own environment", seen)
    assert "runner-secret-f00d" not in seen, "no runner secret reaches the environment"
    assert "CODEX_HOME" not in seen and "AGENTENV_HARBOR" not in seen, "nor the harness's own variables"
    assert "LITELLM" not in seen and "OPENAI" not in seen, "nor its model's endpoint and key"


async def test_it_calls_the_task_s_own_mcp_tool_which_runs_in_the_environment(
        harness_home: object, daemon: None) -> None:
    """mcp-tool's stdio server is started in the environment (the container its workspace is mounted in) and given
    to Codex through its wrapper's mcp-config; the model calls its tool, which writes where the verifier reads."""
    await ensure_installed("codex")

    report, run_id = await run_document(ROOT / "examples" / "harbor" / "mcp-tool", overrides={"a2a_agent_id": "codex"})

    assert report.error is None, report.error
    assert "stamped harbor: only in the image" in report.context.prompt_responses["agent"].response
    assert report.context.metadata.verifications["verifier"].score == 1.0, "the tool wrote in the environment"
    assert not report.context.metadata.unsupported_agent_config, "Codex takes MCP servers"
    assert containers_of(run_id) == [] and marked_processes(run_id) == []


async def test_it_calls_a_tool_served_by_a_compose_sidecar(harness_home: object, daemon: None) -> None:
    """sidecar-tool's streamable-HTTP server runs in a compose sidecar; Codex's environment is started again with
    its workspace, the sidecar with it, and it reaches the server through the run's loopback relay."""
    await ensure_installed("codex")

    report, run_id = await run_document(ROOT / "examples" / "harbor" / "sidecar-tool",
                                        overrides={"a2a_agent_id": "codex"})

    assert report.error is None, report.error
    assert "noted: shipped" in report.context.prompt_responses["agent"].response
    assert report.context.metadata.verifications["verifier"].score == 1.0, "the sidecar holds the note"
    assert containers_of(run_id) == [] and marked_processes(run_id) == []
