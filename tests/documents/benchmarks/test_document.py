"""Valid benchmark documents: the example, Verial-style compilation, entities, seeds and tag filters."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from prefect_agentenv.cli import app
from prefect_agentenv.documents import (
    Benchmark,
    ExpandedTask,
    TaskDocument,
    VerialTask,
    compile_verial_task,
    expand_tasks,
    load_benchmark,
    validate_benchmark_data,
    validate_benchmark_file,
    validate_data,
)
from prefect_agentenv.documents.benchmarks.document import BenchmarkDefaults
from prefect_agentenv.documents.graph import ancestors, resolve_dependencies
from prefect_agentenv.documents.schema import document_schema
from prefect_agentenv.exceptions import TaskDocumentError
from prefect_agentenv.grading.assertions import StateMatch, evaluate

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
BENCHMARK = EXAMPLES / "benchmark.yaml"

PRIOR_AUTH: dict[str, Any] = {
    "id": "prior-auth",
    "name": "Submit prior auth for lumbar MRI",
    "tags": ["records"],
    "env": {"env_id": "records", "artifact_id": "clinic"},
    "entities": [{"id": "ana", "patient_id": "P1", "name": "Ana Diaz", "insurance": {"payer": "Acme Health"}}],
    "task_item": {"instruction": "Submit a prior authorization for <ana.name> with <ana.insurance.payer>.",
                  "trigger": "An inbound referral fax", "expected_inputs": ["the fax", "the chart"]},
    "scenario": {"start_at": "2026-10-02T09:00:00Z", "steps": [
        {"at_sec": 30, "action": "drop_inbox_document",
         "data": {"document_id": "DOC-9", "title": "Referral", "patient_id": "<ana.patient_id>"}}]},
    "criteria": [
        {"label": "Prior auth submitted", "axis": "correctness", "input_entity_id": "ana", "weight": 2,
         "assertion": {"assert": "state_match", "correlate_by": {"resource": "requests", "key": "patient_id"},
                       "assertions": [{"path": "status", "expected": "submitted"}]}},
        {"label": "Nothing cancelled", "weight": -1,
         "assertion": {"assert": "record_count", "resource": "requests", "where": {"status": "cancelled"},
                       "at_least": 1}},
        {"id": "polite", "label": "Polite reply", "axis": "communication",
         "assertion": {"assert": "rubric", "criterion": "The reply to <ana.name> is polite."}},
        {"label": "Names the request", "assertion": {"assert": "response_contains", "needles": ["REQ-"]}},
    ],
}


def bench(*tasks: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"name": "Test", "slug": "test", "tasks": list(tasks), **extra}


def expand(data: dict[str, Any], base_dir: Path = EXAMPLES) -> list[ExpandedTask]:
    result = validate_benchmark_data(data, base_dir)
    assert result.ok, [p.render() for p in result.problems]
    return result.tasks


def compiled(task: dict[str, Any], **defaults: Any) -> TaskDocument:
    return compile_verial_task(VerialTask.model_validate(task), BenchmarkDefaults(**defaults))


def step(doc: TaskDocument, step_id: str) -> dict[str, Any]:
    return doc.step(step_id).model_dump(mode="json", by_alias=True, exclude_defaults=True)


# --- the example benchmark -----------------------------------------------------------------------


def test_the_example_benchmark_is_valid_and_names_four_tasks() -> None:
    result = validate_benchmark_file(BENCHMARK)

    assert result.ok, [p.render() for p in result.problems]
    assert result.warnings == []
    benchmark = result.benchmark
    assert benchmark is not None
    assert (benchmark.slug, benchmark.epochs, benchmark.version) == ("agentenv-examples", 1, "1")
    assert len(benchmark.tasks) == 4


def test_a_benchmark_retries_infrastructure_failures_twice_and_counts_them_unless_told_otherwise() -> None:
    policy = load_benchmark(BENCHMARK).infrastructure
    assert (policy.retries, policy.backoff_seconds, policy.exclude_from_mean, policy.max_error_rate) == (
        2, 5.0, False, None)
    written = {"retries": 0, "exclude_from_mean": True, "max_error_rate": 0.1}
    checked = validate_benchmark_data({"name": "B", "slug": "b", "infrastructure": written,
                                       "tasks": [{"id": "a", "steps": [{"id": "e", "type": "deploy_env",
                                                                        "env_id": "email"}]}]}, ".")
    assert not checked.problems and checked.benchmark is not None
    assert checked.benchmark.infrastructure.model_dump() == {**written, "backoff_seconds": 5.0}


def test_the_example_expands_each_task_and_crosses_only_the_seeded_one_with_the_seed_rows() -> None:
    tasks = expand_tasks(load_benchmark(BENCHMARK), EXAMPLES)

    assert [t.task_id for t in tasks] == [
        "env-roundtrip", "reply-to-dana-scripted[seed=0]", "reply-to-dana-scripted[seed=1]", "chart-handoff",
        "prior-auth-lumbar-mri",
    ]
    assert [t.seed_row for t in tasks if t.base_id == "reply-to-dana-scripted"] == [{"signer": "Sam"},
                                                                                       {"signer": "Sam Rivera"}]
    assert [t.seed_index for t in tasks] == [0, 0, 1, 0, 0]
    assert tasks[0].source == "env-roundtrip.json" and tasks[0].timeout_seconds == 600
    assert tasks[-1].timeout_seconds == 300


def test_every_example_task_is_a_valid_task_document_named_after_its_run() -> None:
    for task in expand_tasks(load_benchmark(BENCHMARK), EXAMPLES):
        again = validate_data(task.document.model_dump(mode="json", by_alias=True, exclude_defaults=True))

        assert again.ok, (task.task_id, [p.render() for p in again.problems])
        assert task.document.id == task.task_id
        assert set(task.document.tags) == set(task.tags)


def test_the_seed_row_is_written_into_the_scripted_reply() -> None:
    tasks = {t.task_id: t for t in expand_tasks(load_benchmark(BENCHMARK), EXAMPLES)}

    plan = step(tasks["reply-to-dana-scripted[seed=1]"].document, "assistant")["agent_config"]["plan"]
    assert plan["tool_calls"][1]["arguments"]["body"].endswith("Best regards,\nSam Rivera")


def test_the_example_verial_task_compiles_to_a_scripted_run_that_creates_then_submits_the_request() -> None:
    [task] = [t for t in expand_tasks(load_benchmark(BENCHMARK), EXAMPLES) if t.base_id == "prior-auth-lumbar-mri"]
    doc = task.document

    assert [s.id for s in doc.steps] == ["env", "seed", "clock", "scenario-1", "scenario-1-clock", "agent", "prompt",
                                         "state", "rubric", "response"]
    calls = [c["tool"] for c in step(doc, "agent")["agent_config"]["plan"]["tool_calls"]]
    assert calls.index("create_request") < calls.index("update_request")
    assert step(doc, "state")["assertions"][0]["correlate_by"] == {"resource": "requests", "key": "patient_id",
                                                                   "value": "P1"}
    assert {c.axis for c in task.criteria} == {"correctness", "process", "communication"}


def test_the_example_tasks_validate_alone_as_task_documents() -> None:
    for name in ("reply-to-dana-scripted.json", "chart-handoff.json"):
        data = json.loads((EXAMPLES / "tasks" / name).read_text(encoding="utf-8"))
        assert validate_data(data, seeds={"signer": "Sam"}).ok, name


# --- compiling a Verial-style task ---------------------------------------------------------------


def test_a_verial_task_compiles_to_setup_scenario_agent_prompt_and_verifiers_in_order() -> None:
    doc = compiled(PRIOR_AUTH)

    assert [(s.id, s.type) for s in doc.steps] == [
        ("env", "deploy_env"), ("seed", "load_artifact"), ("clock", "sync_env_clock"),
        ("scenario-1", "register_env_triggers"), ("scenario-1-clock", "sync_env_clock"),
        ("agent", "deploy_agent"), ("prompt", "prompt_agent"), ("state", "env_state_verifier"),
        ("rubric", "rubrics_verifier"), ("response", "agent_prompt_response_verifier"),
    ]
    assert (doc.id, doc.description, doc.tags) == ("prior-auth", "Submit prior auth for lumbar MRI", ["records"])


def test_the_scenario_runs_before_the_agent_is_prompted_while_the_agent_deploys_in_parallel() -> None:
    doc = compiled(PRIOR_AUTH)
    deps = resolve_dependencies([s.id for s in doc.steps], [s.dependency_ids() for s in doc.steps])
    before = ancestors(deps)

    assert {"env", "seed", "clock", "scenario-1", "scenario-1-clock", "agent"} <= before["prompt"]
    assert before["agent"] == {"env"}
    assert all(before[v] >= {"prompt"} for v in ("state", "rubric", "response"))


def test_a_scenario_action_becomes_a_trigger_at_start_plus_at_sec_and_a_clock_advance_that_fires_it() -> None:
    doc = compiled(PRIOR_AUTH)

    assert step(doc, "clock")["time"] == "2026-10-02T09:00:00Z"
    [trigger] = step(doc, "scenario-1")["triggers"]
    assert trigger == {"at": "2026-10-02T09:00:30+00:00", "action": "drop_inbox_document",
                       "data": {"document_id": "DOC-9", "title": "Referral", "patient_id": "P1"}}
    assert step(doc, "scenario-1-clock")["advance_seconds"] == 30


def test_an_action_at_the_current_clock_needs_no_clock_advance_and_the_clock_never_goes_back() -> None:
    task = {**PRIOR_AUTH, "scenario": {"steps": [
        {"at_sec": 60, "action": "drop_inbox_document", "data": {"title": "a", "patient_id": "P1"}},
        {"at_sec": 0, "action": "drop_inbox_document", "data": {"title": "b", "patient_id": "P1"}}]}}
    doc = compiled(task)

    ids = [s.id for s in doc.steps]
    assert ids[:6] == ["env", "seed", "clock", "scenario-1", "scenario-1-clock", "scenario-2"]
    assert step(doc, "clock")["time"] == "2026-01-05T09:00:00Z"
    assert step(doc, "prompt")["depends_on"] == ["agent", "scenario-2"]


def test_the_prompt_is_the_instruction_with_the_trigger_and_expected_inputs_as_context_lines() -> None:
    prompt = step(compiled(PRIOR_AUTH, timeout_seconds=90), "prompt")

    assert prompt["prompt"] == ("Submit a prior authorization for Ana Diaz with Acme Health.\n\n"
                                "Trigger: An inbound referral fax\nExpected inputs: the fax; the chart")
    assert prompt["timeout_seconds"] == 90
    assert (prompt["agent_name"], prompt["prompt_id"]) == ("agent", "prompt")


def test_entity_fields_fill_placeholders_and_input_entity_id_supplies_the_correlation_value() -> None:
    doc = compiled(PRIOR_AUTH)

    state = step(doc, "state")
    assert state["assertions"][0]["correlate_by"]["value"] == "P1"
    assert step(doc, "rubric")["criteria"][0]["criterion"] == "The reply to Ana Diaz is polite."


def test_a_correlation_value_written_in_the_criterion_wins_over_the_entity() -> None:
    task = json.loads(json.dumps(PRIOR_AUTH))
    task["criteria"][0]["assertion"]["correlate_by"]["value"] = "P2"

    assert step(compiled(task), "state")["assertions"][0]["correlate_by"]["value"] == "P2"


def test_a_scenario_action_can_take_its_data_from_an_entity() -> None:
    task = {**PRIOR_AUTH, "entities": [*PRIOR_AUTH["entities"],
                                       {"id": "fax", "document_id": "DOC-7", "title": "Referral", "patient_id": "P1"}],
            "scenario": {"steps": [{"action": "drop_inbox_document", "entity_id": "fax", "data": {"kind": "fax"}}]}}

    [trigger] = step(compiled(task), "scenario-1")["triggers"]
    assert trigger["data"] == {"document_id": "DOC-7", "title": "Referral", "patient_id": "P1", "kind": "fax"}


def test_state_criteria_become_rows_of_one_verifier_keeping_label_weight_and_axis() -> None:
    doc = compiled(PRIOR_AUTH)
    state = step(doc, "state")

    rows = state["assertions"]
    assert [r["id"] for r in rows] == ["prior_auth_submitted", "nothing_cancelled"]
    assert [(r["label"], r["weight"], r.get("axis")) for r in rows] == [
        ("Prior auth submitted", 2.0, "correctness"), ("Nothing cancelled", -1.0, None)]
    assert doc.step("state").score_aggregator == "weighted_average"  # type: ignore[attr-defined]
    assert state["weight"] == 2  # the positive weights: the task score is the criteria's weighted mean


def test_rubric_and_response_criteria_become_a_rubrics_verifier_and_a_response_verifier() -> None:
    doc = compiled(PRIOR_AUTH, judge_model="judge-large")

    rubric = step(doc, "rubric")
    assert rubric["criteria"] == [{"id": "polite", "criterion": "The reply to Ana Diaz is polite.", "axis": "communication"}]
    assert (rubric["prompt_id"], rubric["judge_model"], rubric["score_aggregator"]) == (
        "prompt", "judge-large", "weighted_average")
    response = step(doc, "response")
    assert (response["response_contains"], response["prompt_id"]) == (["REQ-"], "prompt")


def test_the_compiled_criteria_say_where_each_score_lands() -> None:
    [task] = expand(bench(PRIOR_AUTH))

    assert [(c.id, c.verifier_id, c.row_id, c.axis) for c in task.criteria] == [
        ("prior_auth_submitted", "state", "prior_auth_submitted", "correctness"),
        ("nothing_cancelled", "state", "nothing_cancelled", None),
        ("polite", "rubric", "polite", "communication"),
        ("names_the_request", "response", None, None),
    ]


def test_the_agent_comes_from_the_task_then_the_env_shorthand_then_the_benchmark_then_llm() -> None:
    assert step(compiled(PRIOR_AUTH), "agent")["a2a_agent_id"] == "llm"
    assert step(compiled(PRIOR_AUTH, a2a_agent_id="claude-code", model="m1"), "agent")["a2a_agent_id"] == "claude-code"
    with_env = {**PRIOR_AUTH, "env": {"env_id": "records", "a2a_agent_id": "scripted"}}
    assert step(compiled(with_env, a2a_agent_id="claude-code"), "agent")["a2a_agent_id"] == "scripted"
    agent = step(compiled({**PRIOR_AUTH, "agent": {"a2a_agent_id": "scripted", "model": "m2", "max_turns": 4}},
                          model="m1"), "agent")
    assert (agent["a2a_agent_id"], agent["model"], agent["env_ids"]) == ("scripted", "m2", ["records"])


def test_several_envs_get_their_own_setup_steps_and_state_verifiers() -> None:
    task = {**PRIOR_AUTH, "env": None, "envs": [{"env_id": "records", "artifact_id": "clinic"}, {"env_id": "email"}],
            "scenario": {"steps": [{"action": "deliver_email", "env_id": "email", "data": {"from": "a@b.c"}}]},
            "criteria": [
                {"label": "Submitted", "assertion": {"assert": "record_count", "env_id": "records",
                                                     "resource": "requests", "equals": 1}},
                {"label": "Mailed", "assertion": {"assert": "record_count", "env_id": "email", "resource": "sent",
                                                  "equals": 1}}]}
    task.pop("env")
    doc = compiled(task)

    assert [s.id for s in doc.steps] == ["env-records", "seed-records", "env-email", "clock-email", "scenario-1",
                                         "agent", "prompt", "state-records", "state-email"]
    assert step(doc, "agent")["env_ids"] == ["records", "email"]
    assert step(doc, "prompt")["depends_on"] == ["agent", "seed-records", "scenario-1"]


def test_a_verial_task_without_an_id_is_named_after_its_name() -> None:
    task = {k: v for k, v in PRIOR_AUTH.items() if k != "id"}

    [expanded] = expand(bench(task))
    assert expanded.task_id == "submit-prior-auth-for-lumbar-mri"


# --- seeds ----------------------------------------------------------------------------------------


def test_a_task_using_a_seed_column_runs_once_per_row_with_its_values_filled() -> None:
    triage = {"id": "triage", "steps": [
        {"id": "email", "type": "deploy_env", "env_id": "<env>"},
        {"id": "tick", "type": "sync_env_clock", "env_id": "<env>", "advance_seconds": 60}]}
    other = {"id": "other", "steps": [{"id": "email", "type": "deploy_env", "env_id": "email"}]}

    tasks = expand(bench(triage, other, seeds=[{"env": "email"}, {"env": "records"}, {"env": "email"}]))

    assert [t.task_id for t in tasks] == ["triage[seed=0]", "triage[seed=1]", "triage[seed=2]", "other"]
    assert [t.document.steps[0].env_id for t in tasks[:3]] == ["email", "records", "email"]  # type: ignore[attr-defined]
    assert tasks[1].seed_row == {"env": "records"} and tasks[3].seed_row is None


def test_seed_rows_fill_a_verial_task_before_its_entities_are_bound() -> None:
    task = {**PRIOR_AUTH, "entities": [{"id": "ana", "patient_id": "<pid>", "name": "Ana Diaz",
                                        "insurance": {"payer": "Acme"}}]}

    tasks = expand(bench(task, seeds=[{"pid": "P1"}, {"pid": 7}]))

    assert [t.task_id for t in tasks] == ["prior-auth[seed=0]", "prior-auth[seed=1]"]
    assert [step(t.document, "state")["assertions"][0]["correlate_by"]["value"] for t in tasks] == ["P1", "7"]


def test_seed_rows_can_come_from_a_csv_file_next_to_the_benchmark(tmp_path: Path) -> None:
    (tmp_path / "seeds").mkdir()
    (tmp_path / "seeds" / "rows.csv").write_text("name,env\nDana,email\n\nLee , records\n", encoding="utf-8")
    (tmp_path / "t.yaml").write_text("- {id: e, type: deploy_env, env_id: <env>}\n", encoding="utf-8")
    (tmp_path / "bench.yaml").write_text(json.dumps(bench({"id": "t", "path": "t.yaml"},
                                                          seeds={"csv": "seeds/rows.csv"})), encoding="utf-8")

    result = validate_benchmark_file(tmp_path / "bench.yaml")

    assert result.ok, [p.render() for p in result.problems]
    assert [t.seed_row for t in result.tasks] == [{"name": "Dana", "env": "email"}, {"name": "Lee", "env": "records"}]
    assert [t.document.steps[0].env_id for t in result.tasks] == ["email", "records"]  # type: ignore[attr-defined]


# --- tags and defaults ----------------------------------------------------------------------------


STEPS = [{"id": "e", "type": "deploy_env", "env_id": "email"}]
TAGGED: list[dict[str, Any]] = [
    {"id": "a", "path": "env-roundtrip.json"},  # the document itself is tagged email and smoke
    {"id": "b", "tags": ["slow", "email"], "steps": STEPS},
    {"id": "c", "tags": ["smoke", "slow"], "steps": STEPS},
]


@pytest.mark.parametrize(("tag_filter", "expected"), [
    ({}, ["a", "b", "c"]),
    ({"include_tags": ["smoke"]}, ["a", "c"]),
    ({"exclude_tags": ["slow"]}, ["a"]),
    ({"include_tags": ["smoke"], "exclude_tags": ["slow"]}, ["a"]),
    ({"include_tags": ["email"]}, ["a", "b"]),
])
def test_the_tag_filter_selects_tasks_by_their_own_and_their_documents_tags(
        tag_filter: dict[str, list[str]], expected: list[str]) -> None:
    assert [t.task_id for t in expand(bench(*TAGGED, tags=tag_filter))] == expected


def test_a_step_document_task_takes_its_timeout_and_weight_from_the_entry_or_the_defaults() -> None:
    tasks = expand(bench({"id": "a", "path": "env-roundtrip.json", "timeout_seconds": 20, "weight": 2},
                         {"id": "b", "path": "env-roundtrip.json", "description": "again"},
                         defaults={"timeout_seconds": 50}))

    assert [(t.timeout_seconds, t.weight) for t in tasks] == [(20, 2), (50, 1)]
    assert tasks[1].document.description == "again"


def test_expand_tasks_raises_with_every_problem_when_a_task_is_invalid() -> None:
    benchmark = Benchmark.model_validate(bench({"id": "a", "path": "missing.json"}, {"id": "b", "path": "nope.json"}))

    with pytest.raises(TaskDocumentError) as caught:
        expand_tasks(benchmark, EXAMPLES)
    assert [p.path for p in caught.value.problems] == ["$.tasks[0].path", "$.tasks[1].path"]


# --- rows, CLI and schema -------------------------------------------------------------------------


def test_assertion_rows_carry_their_label_and_axis() -> None:
    check = StateMatch.model_validate({"assert": "state_match", "id": "s", "label": "Submitted", "axis": "correctness",
                                       "correlate_by": {"resource": "requests", "key": "request_id", "value": "R1"},
                                       "assertions": [{"path": "status", "expected": "submitted"}]})

    row = evaluate({"requests": [{"request_id": "R1", "status": "submitted"}]}, check)
    assert (row.result, (row.model_extra or {})["label"], row.axis) == ("pass", "Submitted", "correctness")


def test_the_cli_validates_benchmarks_and_task_documents_alike(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(json.dumps(bench({"id": "a", "path": "missing.json"})), encoding="utf-8")

    ok = CliRunner().invoke(app, ["validate", str(BENCHMARK), str(EXAMPLES / "env-roundtrip.json")])
    failed = CliRunner().invoke(app, ["validate", str(bad)])

    assert ok.exit_code == 0, ok.output
    assert "benchmark.yaml: ok (benchmark: 4 tasks, 5 runs per epoch)" in ok.output
    assert "env-roundtrip.json: ok (8 steps)" in ok.output
    assert failed.exit_code == 2
    assert "at $.tasks[0].path: cannot read the task document missing.json" in failed.output


def test_the_schema_covers_task_and_benchmark_documents() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    yaml = pytest.importorskip("yaml")
    schema = document_schema()

    jsonschema.validators.validator_for(schema).check_schema(schema)
    assert schema["anyOf"][2] == {"$ref": "#/$defs/Benchmark"}
    jsonschema.validate(yaml.safe_load(BENCHMARK.read_text(encoding="utf-8")), schema)
    jsonschema.validate(json.loads((EXAMPLES / "tasks" / "chart-handoff.json").read_text(encoding="utf-8")), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bench({"id": "a", "path": "t.json"}, concurency=2), schema)
