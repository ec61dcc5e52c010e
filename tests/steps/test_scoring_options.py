"""Scoring-only env vars: resolved when the verifier starts, given only to scoring, never persisted."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from prefect_agentenv.artifacts import get_artifact_store

from .helpers import run_doc

pytestmark = pytest.mark.usefixtures("published")

SECRET = "grader-token-9f8e7d6c"


async def test_scoring_env_reaches_the_verify_script_and_never_the_report(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_GRADER_TOKEN", SECRET)
    script = tmp_path / "verify.py"
    script.write_text(textwrap.dedent(f"""
        import os
        async def verify(mcp_url):
            token = os.environ.get("GRADER_TOKEN")
            return [{{"id": "token", "result": token == "{SECRET}", "justification": f"token={{token}}"}},
                    {{"id": "mode", "result": os.environ.get("GRADE_MODE") == "strict"}}]
    """))
    with get_artifact_store() as store:
        store.publish_files("verify-token", {"verify.py": script})
    report = await run_doc([
        {"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": []},
        {"id": "check", "type": "env_outcome_verifier", "env_id": "email", "verifier_id": "token",
         "script_artifact_id": "verify-token",
         "scoring_env": {"GRADER_TOKEN": "${TEST_GRADER_TOKEN}", "GRADE_MODE": "${TEST_GRADE_MODE:-strict}"}},
    ])
    assert report.status == "completed", report.error
    assert report.context.metadata.verifications["token"].score == 1.0
    assert SECRET not in report.model_dump_json()
    assert "token=***" in (report.context.metadata.verifications["token"].results[0].justification or "")


async def test_an_unset_scoring_variable_fails_the_verifier_with_a_clear_error() -> None:
    report = await run_doc([
        {"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": []},
        {"id": "check", "type": "env_outcome_verifier", "env_id": "email", "verifier_id": "token",
         "script_artifact_id": "verify-delivery", "scoring_env": {"T": "${SURELY_UNSET_GRADER_VAR}"}},
    ])
    assert report.status == "failed"
    assert "SURELY_UNSET_GRADER_VAR is not set" in (report.error or "")
