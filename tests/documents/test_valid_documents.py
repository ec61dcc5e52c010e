"""Valid task documents: dependency forms, defaults, YAML, warnings, seeds and ${VAR} references."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from prefect_agentenv.documents import (
    TaskDocument,
    fill_placeholders,
    load_task,
    parse_text,
    resolve_env_vars,
    validate_data,
    validate_file,
)
from prefect_agentenv.documents.graph import ancestors, resolve_dependencies
from prefect_agentenv.documents.loading import env_var_names
from prefect_agentenv.exceptions import TaskDocumentError

VALID = Path(__file__).parent / "valid"

EMAIL = {"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": []}
ASSISTANT = {"id": "assistant", "type": "deploy_agent", "env_ids": ["email"], "a2a_agent_id": "claude-code",
             "agent_name": "assistant", "depends_on": ["email"]}
REPLY = {"id": "reply", "type": "prompt_agent", "agent_name": "assistant", "prompt_id": "reply",
         "prompt": "Reply to Dana.", "depends_on": [{"task_step_id": "assistant"}]}


def dependencies(doc: TaskDocument) -> dict[str, list[str]]:
    return resolve_dependencies([s.id for s in doc.steps], [s.dependency_ids() for s in doc.steps])


# --- the reference example ---------------------------------------------------------------------


def test_the_reference_example_has_no_problem_and_no_warning() -> None:
    result = validate_file(VALID / "reply-to-dana.json")

    assert result.problems == []
    assert result.warnings == []


def test_the_reference_example_validates_to_a_document_named_after_its_file() -> None:
    doc = load_task(VALID / "reply-to-dana.json")

    assert doc.id == "reply-to-dana"
    assert [s.id for s in doc.steps] == ["email", "inbox", "assistant", "reply", "tone", "collect"]
    assert [s.type for s in doc.steps] == [
        "deploy_env", "load_artifact", "deploy_agent", "prompt_agent", "rubrics_verifier", "collect_artifacts",
    ]


def test_yaml_and_json_give_the_same_document() -> None:
    from_json = load_task(VALID / "reply-to-dana.json")
    from_yaml = load_task(VALID / "reply-to-dana.yaml")

    assert from_yaml.model_dump(mode="json") == from_json.model_dump(mode="json")


def test_unquoted_yaml_dates_stay_text_in_free_form_fields_and_parse_where_a_time_is_expected() -> None:
    text = (
        "- {id: env, type: deploy_env, env_id: email, depends_on: []}\n"
        "- {id: clock, type: sync_env_clock, env_id: email, time: 2026-01-05T09:00:00Z}\n"
        "- {id: due, type: register_env_triggers, env_id: email,\n"
        "   triggers: [{at: 2026-01-05T09:30:00Z, action: deliver_email, data: {sent: 2026-01-04}}]}\n"
        "- {id: agent, type: deploy_agent, a2a_agent_id: llm, agent_config: {deadline: 2026-01-06}}\n"
    )
    result = validate_data(parse_text(text, "dates.yaml"))

    assert result.problems == []
    assert result.document is not None
    clock, due, agent = result.document.steps[1:]
    assert clock.model_dump(mode="json")["time"] == "2026-01-05T09:00:00Z"
    assert due.model_dump(mode="json")["triggers"] == [
        {"at": "2026-01-05T09:30:00Z", "action": "deliver_email", "data": {"sent": "2026-01-04"}}]
    assert agent.model_dump(mode="json")["agent_config"] == {"deadline": "2026-01-06"}


# --- depends_on --------------------------------------------------------------------------------


def test_depends_on_accepts_a_step_id_or_an_object_naming_one() -> None:
    result = validate_data([EMAIL, ASSISTANT, REPLY])

    assert result.problems == []
    assert result.document is not None
    assert dependencies(result.document) == {"email": [], "assistant": ["email"], "reply": ["assistant"]}


@pytest.mark.parametrize("omitted", [True, False], ids=["omitted", "null"])
def test_depends_on_omitted_or_null_means_after_every_earlier_step(omitted: bool) -> None:
    reply = {k: v for k, v in REPLY.items() if k != "depends_on"}
    if not omitted:
        reply["depends_on"] = None
    result = validate_data([EMAIL, ASSISTANT, reply])

    assert result.problems == []
    assert result.document is not None
    assert result.document.step("reply").depends_on is None
    # Kept as the earlier steps nothing else waits for; its ancestors are every earlier step.
    deps = dependencies(result.document)
    assert deps["reply"] == ["assistant"]
    assert ancestors(deps)["reply"] == {"email", "assistant"}


def test_an_omitted_depends_on_waits_for_every_earlier_branch() -> None:
    calendar = {"id": "calendar", "type": "deploy_env", "env_id": "calendar", "depends_on": []}
    reply = {k: v for k, v in REPLY.items() if k != "depends_on"}
    result = validate_data([EMAIL, calendar, ASSISTANT, reply])

    assert result.document is not None
    deps = dependencies(result.document)
    assert deps["reply"] == ["calendar", "assistant"]
    assert ancestors(deps)["reply"] == {"email", "calendar", "assistant"}


def test_depends_on_omitted_on_the_first_step_means_no_dependencies() -> None:
    email = {k: v for k, v in EMAIL.items() if k != "depends_on"}
    result = validate_data([email])

    assert result.document is not None
    assert dependencies(result.document) == {"email": []}


def test_an_empty_depends_on_list_means_no_dependencies() -> None:
    second_env = {"id": "calendar", "type": "deploy_env", "env_id": "calendar", "depends_on": []}
    result = validate_data([EMAIL, second_env])

    assert result.document is not None
    assert dependencies(result.document) == {"email": [], "calendar": []}


def test_an_empty_depends_on_list_cuts_the_step_off_from_earlier_providers() -> None:
    result = validate_data([EMAIL, {**ASSISTANT, "depends_on": []}])

    [problem] = result.problems
    assert (problem.step_id, problem.path) == ("assistant", "$[1].env_ids[0]")


# --- defaults ----------------------------------------------------------------------------------


def test_a_step_fails_the_task_on_error_unless_told_otherwise() -> None:
    result = validate_data([EMAIL, ASSISTANT, {**REPLY, "fail_task_on_error": False}])

    assert result.document is not None
    assert [s.fail_task_on_error for s in result.document.steps] == [True, True, False]


def test_retry_config_retries_once_by_default_and_none_without_it() -> None:
    reply = {**REPLY, "retry_config": {"retry_from_step_id": "assistant"}}
    result = validate_data([EMAIL, ASSISTANT, reply])

    assert result.document is not None
    retry = result.document.step("reply").retry_config
    assert retry is not None
    assert (retry.retry_from_step_id, retry.max_retries) == ("assistant", 1)
    assert result.document.step("assistant").retry_config is None


def test_a_step_may_retry_from_itself() -> None:
    reply = {**REPLY, "retry_config": {"retry_from_step_id": "reply", "max_retries": 3}}
    result = validate_data([EMAIL, ASSISTANT, reply])

    assert result.problems == []


# --- object form -------------------------------------------------------------------------------


def test_the_object_form_keeps_its_own_id_description_and_tags() -> None:
    data = {"id": "reply-to-dana", "description": "Reply to Dana.", "tags": ["email"],
            "steps": [EMAIL, ASSISTANT, REPLY]}
    result = validate_data(data, default_id="from-the-file-name")

    assert result.document is not None
    assert (result.document.id, result.document.description, result.document.tags) == (
        "reply-to-dana", "Reply to Dana.", ["email"],
    )


def test_the_object_form_without_an_id_takes_the_default_id() -> None:
    result = validate_data({"steps": [EMAIL]}, default_id="from-the-file-name")

    assert result.document is not None
    assert result.document.id == "from-the-file-name"


# --- accepted but ignored fields ---------------------------------------------------------------


def test_a_field_the_runner_does_not_act_on_is_a_warning_that_names_it_not_an_error() -> None:
    result = validate_data([{**EMAIL, "priority": 5, "metadata": {"owner": "evals"}}, ASSISTANT])

    assert result.problems == []
    [warning] = result.warnings
    assert warning.severity == "warning"
    assert (warning.step_id, warning.path) == ("email", "$[0]")
    assert "priority" in warning.message and "metadata" in warning.message


def test_an_ignored_field_is_left_out_of_the_validated_step() -> None:
    result = validate_data([{**EMAIL, "priority": 5}])

    assert result.ok
    assert result.document is not None
    assert "priority" not in result.document.steps[0].model_dump()
    assert result.document.steps[0].ignored_fields == ["priority"]


def test_ignored_fields_are_reported_for_each_step_that_has_them() -> None:
    result = validate_data([
        {**EMAIL, "env_state_type": "snapshot"},
        {**ASSISTANT, "agent_description": "Answers email"},
        {**REPLY, "effort": "high"},
    ])

    assert result.problems == []
    assert {(w.step_id, w.message.split(": ")[-1]) for w in result.warnings} == {
        ("email", "env_state_type"), ("assistant", "agent_description"), ("reply", "effort"),
    }


# --- older field names ---------------------------------------------------------------------------

HANDOFF_TASK: list[dict[str, Any]] = [
    {"id": "analyst", "type": "deploy_agent", "a2a_agent_id": "claude-code", "agent_name": "analyst", "depends_on": []},
    {"id": "judge", "type": "deploy_agent", "a2a_agent_id": "judge", "agent_name": "judge", "depends_on": []},
    {"id": "collect", "type": "collect_artifacts", "agent_name": "analyst", "artifact_paths": ["q3.png"],
     "depends_on": ["analyst"]},
    {"id": "handoff", "type": "load_artifact", "agent_name": "judge", "collected_artifacts_step_id": "collect",
     "depends_on": ["collect", "judge"]},
]


def test_collected_artifacts_step_id_is_the_older_name_of_artifact_from_step_id() -> None:
    result = validate_data(HANDOFF_TASK)

    assert result.problems == []
    assert result.document is not None
    assert result.document.step("handoff").artifact_from_step_id == "collect"  # type: ignore[attr-defined]


def test_collected_artifacts_step_id_naming_a_non_ancestor_is_reported() -> None:
    handoff = {**HANDOFF_TASK[3], "depends_on": ["judge"]}
    result = validate_data([*HANDOFF_TASK[:3], handoff])

    problems = result.problems
    assert problems
    assert all(p.step_id == "handoff" and "collect 'collect'" in p.message for p in problems)


@pytest.mark.parametrize("name", ["reply-to-dana.json"])
def test_a_validated_document_survives_a_round_trip_through_json(name: str) -> None:
    """Prefect passes the document to the flow as a JSON parameter."""
    doc = load_task(VALID / name)

    again = TaskDocument.model_validate(doc.model_dump(mode="json"))
    assert again.model_dump(mode="json") == doc.model_dump(mode="json")


def test_a_document_using_the_older_collect_field_name_survives_a_round_trip_through_json() -> None:
    doc = validate_data(HANDOFF_TASK).raise_for_problems()

    again = TaskDocument.model_validate(doc.model_dump(mode="json"))
    assert again.step("handoff").artifact_from_step_id == "collect"  # type: ignore[attr-defined]
    assert again.model_dump(mode="json") == doc.model_dump(mode="json")


# --- problems raise --------------------------------------------------------------------------


def test_load_task_raises_with_every_problem_listed(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('[{"id": "reply", "type": "prompt_agent", "prompt_id": "reply", "prompt": "Hi", "agnt_name": "a",'
                    ' "timeout_seconds": 0}]')

    with pytest.raises(TaskDocumentError) as raised:
        load_task(path)

    paths = {p.path for p in raised.value.problems}
    assert {"$[0].timeout_seconds", "$[0].agnt_name"} <= paths
    assert str(path) in str(raised.value)


# --- <name> placeholders -----------------------------------------------------------------------


def test_placeholders_are_filled_from_the_seeds_before_validation() -> None:
    reply = {**REPLY, "prompt": "Reply to <recipient> about the <quarter> numbers."}
    result = validate_data([{**EMAIL, "env_id": "<env>"}, {**ASSISTANT, "env_ids": ["<env>"]}, reply],
                           seeds={"recipient": "Dana", "quarter": "Q3", "env": "email"})

    assert result.problems == []
    assert result.document is not None
    assert result.document.step("reply").prompt == "Reply to Dana about the Q3 numbers."  # type: ignore[attr-defined]
    assert result.document.step("email").env_id == "email"  # type: ignore[attr-defined]


def test_placeholders_are_filled_when_validating_a_file(tmp_path: Path) -> None:
    path = tmp_path / "seeded.yaml"
    path.write_text("- {id: email, type: deploy_env, env_id: '<env>', depends_on: []}\n"
                    "- {id: calendar, type: deploy_env, env_id: '<env>', depends_on: []}\n")

    unseeded = validate_file(path)
    seeded = validate_file(path, seeds={"env": "email"})

    assert unseeded.problems != []  # both steps deploy '<env>'
    assert [p.message for p in seeded.problems] == ["Env 'email' is already deployed"]


def test_unknown_placeholders_are_left_as_they_are() -> None:
    text = "Hello <name>, see <attachment> (<b>bold</b>) and a <not a placeholder>."

    filled = fill_placeholders(text, {"name": "Dana", "b": "B"})

    assert filled == "Hello Dana, see <attachment> (Bbold</b>) and a <not a placeholder>."


def test_placeholders_are_filled_in_nested_values_and_only_in_strings() -> None:
    value = {"prompt": "<greeting>", "list": ["<n>", 3, None, True], "<greeting>": {"deep": "<n> items"}}

    assert fill_placeholders(value, {"greeting": "Hi", "n": 2}) == {
        "prompt": "Hi", "list": ["2", 3, None, True], "<greeting>": {"deep": "2 items"},
    }


def test_no_seeds_leave_the_document_untouched() -> None:
    value = [{"prompt": "<recipient>"}]

    assert fill_placeholders(value, {}) is value


# --- ${VAR} references ---------------------------------------------------------------------------


def test_env_var_references_are_resolved_from_the_given_environment() -> None:
    value = {"url": "https://${HOST}/v1", "headers": ["Bearer ${TOKEN}"], "port": 443}

    assert resolve_env_vars(value, {"HOST": "api.example.com", "TOKEN": "s3cret"}) == {
        "url": "https://api.example.com/v1", "headers": ["Bearer s3cret"], "port": 443,
    }


def test_an_env_var_reference_with_a_default_uses_it_when_the_variable_is_unset() -> None:
    assert resolve_env_vars("${REGION:-eu-west-1}/${STAGE:-}", {}) == "eu-west-1/"
    assert resolve_env_vars("${REGION:-eu-west-1}", {"REGION": "us-east-1"}) == "us-east-1"


def test_an_unset_env_var_without_a_default_raises_key_error_naming_it() -> None:
    with pytest.raises(KeyError, match="API_TOKEN"):
        resolve_env_vars({"headers": {"Authorization": "Bearer ${API_TOKEN}"}}, {})


def test_resolved_env_var_values_are_collected_for_redaction_but_defaults_are_not() -> None:
    used: set[str] = set()
    resolve_env_vars(["${TOKEN}", "${EMPTY}", "${MISSING:-fallback}"], {"TOKEN": "s3cret", "EMPTY": ""}, used)

    assert used == {"s3cret"}


def test_env_var_references_default_to_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTENV_TEST_JUDGE_MODEL", "judge-model")

    assert resolve_env_vars("${AGENTENV_TEST_JUDGE_MODEL}") == "judge-model"


def test_env_var_names_lists_only_references_without_a_default() -> None:
    value = {"a": "${TOKEN}", "b": ["${HOST:-localhost}", {"c": "${TOKEN}-${USER_ID}"}], "d": "$PLAIN"}

    assert env_var_names(value) == {"TOKEN", "USER_ID"}


def test_validation_leaves_env_var_references_for_run_time() -> None:
    step = {"id": "tone", "type": "rubrics_verifier", "prompt_id": "reply", "verifier_id": "tone",
            "criteria": [{"id": "polite", "criterion": "Polite."}], "scoring_env": {"JUDGE_KEY": "${JUDGE_KEY}"}}
    result = validate_data([EMAIL, ASSISTANT, REPLY, step])

    assert result.document is not None
    assert result.document.step("tone").scoring_env == {"JUDGE_KEY": "${JUDGE_KEY}"}  # type: ignore[attr-defined]
