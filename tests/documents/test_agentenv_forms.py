"""AgentEnv field names and forms are read into this runner's canonical step models at load."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from prefect_agentenv.cli import app
from prefect_agentenv.documents import validate_data
from prefect_agentenv.documents.models import explain_step

ENV = {"id": "env", "type": "deploy_env", "env_id": "email"}


def steps_of(raw: list[dict[str, Any]]) -> list[Any]:
    result = validate_data(raw)
    assert result.ok, [p.render() for p in result.problems]
    assert result.document is not None
    return result.document.steps


def notices(raw: list[dict[str, Any]]) -> list[str]:
    return [w.message for w in validate_data(raw).warnings if w.severity == "notice"]


def test_an_outcome_verifier_names_its_script_with_agentenvs_file_artifact_id() -> None:
    step = steps_of([ENV, {"id": "check", "type": "env_outcome_verifier", "env_id": "email",
                           "file_artifact_id": "check_mail", "file_artifact_version": 3}])[1]

    assert (step.script_artifact_id, step.version) == ("check_mail", "3")
    assert step.verifier_id == "check", "an omitted verifier_id is the step id"


def test_both_names_of_one_field_is_an_error_naming_both() -> None:
    result = validate_data([ENV, {"id": "check", "type": "env_outcome_verifier", "env_id": "email",
                                  "verifier_id": "v", "file_artifact_id": "a", "script_artifact_id": "b"}])

    assert not result.ok
    assert "give script_artifact_id or its AgentEnv name file_artifact_id, not both" in result.problems[0].message


def test_sync_env_clock_reads_virtual_time_and_its_speed() -> None:
    frozen, running = steps_of([ENV,
        {"id": "freeze", "type": "sync_env_clock", "env_id": "email", "virtual_time": "2026-03-02T09:00:00Z",
         "virtual_seconds_per_real_second": 0, "tolerate_missing_sync_time": True},
        {"id": "run", "type": "sync_env_clock", "env_id": "email", "virtual_time": "2026-03-02T09:00:00Z"}])[1:]

    assert frozen.time.isoformat() == "2026-03-02T09:00:00+00:00" and frozen.frozen is True
    assert running.frozen is None
    assert frozen.ignored_fields == ["tolerate_missing_sync_time"]


def test_a_clock_speed_this_runner_cannot_keep_is_a_notice() -> None:
    said = notices([ENV, {"id": "fast", "type": "sync_env_clock", "env_id": "email",
                          "virtual_time": "2026-03-02T09:00:00Z", "virtual_seconds_per_real_second": 60}])

    assert any("virtual_seconds_per_real_second=60" in n for n in said)


def test_response_criteria_become_case_sensitive_needles_and_dotall_patterns() -> None:
    deploy = {"id": "deploy", "type": "deploy_agent", "a2a_agent_id": "scripted"}
    ask = {"id": "ask", "type": "prompt_agent", "prompt_id": "ask", "prompt": "6*7?"}
    check = {"id": "check", "type": "agent_prompt_response_verifier", "prompt_id": "ask", "verifier_id": "answer",
             "criteria": [{"type": "response_contains", "needles": ["42", "forty"]},
                          {"type": "response_regex_present", "pattern": "^4.2$"}]}

    step = steps_of([deploy, ask, check])[2]

    assert step.response_contains == ["42", "forty"] and step.case_sensitive is True
    assert [(r.pattern, r.flags) for r in step.response_regex_present] == [("^4.2$", ["DOTALL"])]


def test_an_unknown_response_criterion_type_is_an_error_naming_the_known_ones() -> None:
    result = validate_data([{"id": "deploy", "type": "deploy_agent", "a2a_agent_id": "scripted"},
                            {"id": "ask", "type": "prompt_agent", "prompt": "hi"},
                            {"id": "check", "type": "agent_prompt_response_verifier", "prompt_id": "ask",
                             "criteria": [{"type": "response_equals", "value": "42"}]}])

    assert [p.step_id for p in result.problems] == ["check"]
    assert "unknown criterion type 'response_equals'" in result.problems[0].message


def test_deploy_agent_and_prompt_agent_without_names_use_agentenvs_default_agent() -> None:
    deploy, ask = steps_of([{"id": "deploy", "type": "deploy_agent", "a2a_agent_id": "scripted", "env_ids": None},
                            {"id": "ask", "type": "prompt_agent", "prompt": "hi"}])

    assert deploy.agent_name == ask.agent_name == "default-agent"
    assert ask.prompt_id == "ask"
    assert explain_step(ask)["agent_name"] == "default-agent", "--explain shows the implied name"


def test_a_deploy_agent_naming_no_agent_deploys_the_reference_llm_agent_and_says_so() -> None:
    said = notices([{"id": "deploy", "type": "deploy_agent"}])

    assert any("reference agent 'llm'" in n for n in said)


def test_prompt_parts_of_text_become_the_prompt_and_other_parts_are_refused() -> None:
    deploy = {"id": "deploy", "type": "deploy_agent", "a2a_agent_id": "scripted"}
    ask = steps_of([deploy, {"id": "ask", "type": "prompt_agent",
                             "parts": [{"kind": "text", "text": "Hello"}, {"kind": "text", "text": "there"}]}])[1]
    assert ask.prompt == "Hello\n\nthere"

    result = validate_data([deploy, {"id": "ask", "type": "prompt_agent",
                                     "parts": [{"kind": "file", "file": {"uri": "s3://b/k"}}]}])
    assert "only text parts are supported" in result.problems[0].message


def test_sandbox_probe_criteria_become_checks_under_base_dir() -> None:
    box = {"id": "box", "type": "deploy_sandbox", "sandbox_name": "box", "sandbox_mode": "vm"}
    verify = {"id": "probe", "type": "verify_sandbox", "sandbox_name": "box", "shell_timeout_seconds": 5,
              "criteria": [
                  {"type": "probe_file_exists", "criterion": "made the report", "paths": ["out/report.md"]},
                  {"type": "probe_dir_exists", "criterion": "has out", "paths": ["out"], "weight": 2},
                  {"type": "probe_file_contains", "criterion": "says done", "paths": ["log.txt"], "value": "done$"},
                  {"type": "bash_cmd_succeeds", "criterion": "tests pass", "bash_cmd": "make test"},
                  {"type": "rubric", "criterion": "reads well"}]}

    step = steps_of([box, verify])[1]

    assert step.base_dir == "/app", "AgentEnv's default base_dir"
    assert [(c.id, c.kind) for c in step.checks] == [
        ("made the report", "file_exists"), ("has out", "dir_exists"), ("says done", "file_matches"),
        ("tests pass", "command_succeeds")]
    assert step.checks[2].pattern == "done$" and step.checks[3].command == "make test"
    assert {c.timeout_seconds for c in step.checks} == {5}
    assert any("type 'rubric' is not a sandbox probe" in n for n in notices([box, verify]))


def test_hosted_sandbox_fields_are_notices_and_other_unknown_fields_still_errors() -> None:
    result = validate_data([{**ENV, "ttl_seconds": 600, "cpu": 2, "gateway_mode": "performance",
                             "sandbox_type": "local"}])
    assert result.ok
    [notice] = [w for w in result.warnings if w.severity == "notice"]
    assert notice.step_id == "env" and "ttl_seconds, cpu, gateway_mode, sandbox_type" in notice.message

    result = validate_data([{**ENV, "ttl_secnds": 600}])
    assert not result.ok
    assert result.problems[0].hint == "did you mean 'ttl_seconds'?"


def test_a_container_sandbox_is_refused_with_the_reason() -> None:
    result = validate_data([{"id": "box", "type": "deploy_sandbox", "sandbox_name": "box", "sandbox_mode": "container",
                             "image": "python:3.11", "port": 8000}])

    assert not result.ok
    assert "container sandboxes (image, sandbox_mode: container) are not supported" in result.problems[0].message


def test_validate_explain_prints_the_canonical_form(tmp_path: Path) -> None:
    doc = tmp_path / "smoke.json"
    doc.write_text(json.dumps([{**ENV, "sandbox_type": "local"},
                               {"id": "echoes", "type": "env_outcome_verifier", "env_id": "email",
                                "file_artifact_id": "check_echo", "verifier_id": "echoes"}]))

    result = CliRunner().invoke(app, ["validate", "--explain", str(doc)])

    assert result.exit_code == 0, result.output
    canonical = json.loads(result.stdout[result.stdout.index("{"):])
    assert canonical["steps"][1] == {"id": "echoes", "type": "env_outcome_verifier", "env_id": "email",
                                     "script_artifact_id": "check_echo", "verifier_id": "echoes"}
    assert "notice: step 'env'" in result.stderr


def test_a_retry_config_may_name_its_start_with_agentenvs_go_to_step_id() -> None:
    step = steps_of([{**ENV, "retry_config": {"go_to_step_id": "env", "max_retries": 2}}])[0]

    assert (step.retry_config.retry_from_step_id, step.retry_config.max_retries) == ("env", 2)


def test_load_artifact_reads_a_one_entry_artifacts_list_and_refuses_urls() -> None:
    box = {"id": "box", "type": "deploy_sandbox", "sandbox_name": "box", "sandbox_mode": "vm"}
    step = steps_of([box, {"id": "load", "type": "load_artifact", "sandbox_name": "box",
                           "artifacts": [{"id": "greeting", "version": 2}]}])[1]
    assert (step.artifact_id, step.version) == ("greeting", "2")

    result = validate_data([box, {"id": "load", "type": "load_artifact", "sandbox_name": "box",
                                  "urls": ["https://example.com/data.csv"]}])
    assert "urls (downloads at run time) are not supported" in result.problems[0].message
