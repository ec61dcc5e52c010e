"""Secrets never reach what a run stores, and a too-short "secret" garbles nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefect_agentenv.redaction import MASK, Redactor

from .helpers import run_doc

TOKEN = "tok-5f3a9c1e77"


async def test_a_resolved_secret_is_in_no_report_trajectory_conversation_or_log(
        agentenv_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTENV_FAULT_TOKEN", TOKEN)
    monkeypatch.setenv("AGENTENV_FAULT_ONE", "e")
    report = await run_doc([
        {"id": "agent", "type": "deploy_agent", "a2a_agent_id": "scripted", "agent_name": "a", "depends_on": [],
         "agent_config": {"plan": {"reply": "I used ${AGENTENV_FAULT_TOKEN} as told"}}},
        {"id": "ask", "type": "prompt_agent", "agent_name": "a", "prompt_id": "p",
         "prompt": "Use the token ${AGENTENV_FAULT_TOKEN}; the letter is ${AGENTENV_FAULT_ONE}."},
    ])
    assert report.status == "completed", report.error
    prompt = report.context.prompt_responses["p"].prompt
    assert prompt == f"Use the token {MASK}; the letter is e."
    stored = [p for p in agentenv_home.rglob("*") if p.is_file()]
    assert any("conversations" in str(p) for p in stored)
    leaks = [p for p in stored if TOKEN.encode() in p.read_bytes()]
    assert leaks == []
    assert any("shorter than" in w for w in report.warnings)


def test_values_shorter_than_the_minimum_are_never_masked() -> None:
    redactor = Redactor({"e", "abc", "hunter2"})
    assert redactor.text("error: the hunter2 secret") == f"error: the {MASK} secret"
    assert redactor.data({"k": ["abc e"]}) == {"k": ["abc e"]}
    assert not Redactor({"x"})
