"""A harness inside a real task: it calls the email env's MCP tool through the wrapper's mcp-config,
the outcome verifier passes on the env's state, a file it wrote is collected, and a second prompt
naming the same context_id resumes its session."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harnesses.conftest import ROOT, ensure_installed, marked_processes, run_document
from prefect_agentenv.artifacts import get_artifact_store

pytestmark = pytest.mark.slow

DOCUMENT = ROOT / "examples" / "tasks" / "harness-email.json"
EXAMPLES = ROOT / "examples" / "artifacts"
SESSION = re.compile(r'"(?:sessionID|thread_id)":\s*"([^"]+)"')
"""OpenCode's events carry its session's id, Codex's ``thread.started`` its thread's."""


def publish_artifacts() -> None:
    with get_artifact_store() as store:
        store.publish_environment("inbox", "email", "inbox.json", EXAMPLES / "inbox.json")
        store.publish_files("verify-reply", {"verify.py": EXAMPLES / "verify_reply.py"})


def sessions(location: str | None) -> set[str]:
    assert location and location.startswith("file://"), location
    return set(SESSION.findall(Path(location.removeprefix("file://")).read_text()))


@pytest.mark.parametrize(("harness", "send_tool"), [("opencode", "email_send"), ("codex", "send")])
async def test_a_harness_replies_through_the_env_s_tool_writes_a_file_and_resumes_its_session(
        harness_home: Path, harness: str, send_tool: str) -> None:
    await ensure_installed(harness)
    publish_artifacts()

    report, run_id = await run_document(DOCUMENT, seeds={"harness": harness, "send_tool": send_tool})

    responses = report.context.prompt_responses
    assert report.outcome == "PASSED", (report.error, responses, report.context.metadata.verifications)
    assert report.context.metadata.verifications["delivered"].score == 1.0, "the env holds the reply to Dana"
    assert responses["reply"].tool_call_count == 1, "the env's tool was called by the harness, through its wrapper"
    assert responses["note"].response.strip() == "replied to Dana about the Q3 numbers"
    collected = report.context.metadata.collected_artifacts["collect"]
    assert list(collected.artifacts) == ["sent.txt"]
    stored = Path(collected.artifacts["sent.txt"].removeprefix("file://")).read_text()
    assert stored.strip() == "replied to Dana about the Q3 numbers"
    first, second = sessions(responses["reply"].trajectory), sessions(responses["note"].trajectory)
    assert len(first) == 1 and first == second, "the second prompt continued the harness's session"
    assert marked_processes(run_id) == []
