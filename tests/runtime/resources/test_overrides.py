"""Run overrides: parsed once, read by meaning, an unknown key refused with a did-you-mean."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from prefect_agentenv.cli import app
from prefect_agentenv.documents.models import TaskDocument
from prefect_agentenv.exceptions import ConfigurationError
from prefect_agentenv.flows.agent_task import run_task_document
from prefect_agentenv.runtime.resources.overrides import RunOverrides


def test_an_agents_own_override_comes_before_the_runs() -> None:
    given = {"a2a_agent_id": "llm", "judge.a2a_agent_id": "scripted", "agent_config": '{"a": 1}',
             "judge_model": "gpt-4.1-mini", "verify_python": "/usr/bin/python3"}
    overrides = RunOverrides.parse(given)
    assert overrides.agent_id("judge") == "scripted" and overrides.agent_id("assistant") == "llm"
    assert overrides.config_for("assistant") == '{"a": 1}' and overrides.judge_model == "gpt-4.1-mini"
    assert overrides.verify_python == "/usr/bin/python3" and overrides.model is None
    assert overrides.as_pairs() == given
    assert RunOverrides.parse(None).agent_id("assistant") is None


@pytest.mark.parametrize(("key", "suggestion"), [("judge_modle", "judge_model"),
                                                 ("assistant.agentconfig", "assistant.agent_config"),
                                                 ("a2a_agent", "a2a_agent_id")])
def test_an_unknown_key_is_refused_with_the_closest_known_key(key: str, suggestion: str) -> None:
    with pytest.raises(ConfigurationError, match=f"unknown override '{key}': did you mean '{suggestion}'"):
        RunOverrides.parse({"a2a_agent_id": "scripted", key: "x"})


def test_the_cli_refuses_an_unknown_override_before_anything_runs(tmp_path: Path) -> None:
    path = tmp_path / "task.json"
    path.write_text(json.dumps([{"id": "a", "type": "test_noop"}]))
    result = CliRunner().invoke(app, ["run", str(path), "--override", "judge_modle=x"])
    assert result.exit_code == 2
    assert "did you mean 'judge_model'" in result.output


@pytest.mark.usefixtures("agentenv_home")
async def test_a_run_with_an_unknown_override_deploys_nothing_and_its_report_says_why() -> None:
    document = TaskDocument.model_validate({"id": "typo", "steps": [{"id": "a", "type": "test_noop"}]})
    report = await run_task_document(document, overrides={"judge_modle": "x"}, execute_in_prefect=False,
                                     publish=False)
    assert report.status == "failed" and [s.state for s in report.steps] == ["not_run"]
    assert report.error and "unknown override 'judge_modle'" in report.error and "nothing was deployed" in report.error
