"""Invalid benchmark documents: each reports exactly its problems, at the benchmark's JSON path."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

import pytest

from prefect_agentenv.documents import Problem, validate_benchmark_data, validate_benchmark_file

VERIAL: dict[str, Any] = {
    "id": "prior-auth",
    "name": "Prior auth",
    "tags": ["records"],
    "env": {"env_id": "records", "artifact_id": "clinic"},
    "entities": [{"id": "ana", "patient_id": "P1", "name": "Ana Diaz", "birth_date": "1965-03-15"}],
    "task_item": {"instruction": "Submit a prior authorization for <ana.name>."},
    "criteria": [{"label": "Submitted", "input_entity_id": "ana", "assertion": {
        "assert": "state_match", "correlate_by": {"resource": "requests", "key": "patient_id"},
        "assertions": [{"path": "status", "expected": "submitted"}]}}],
}
DEPLOY = {"id": "email", "type": "deploy_env", "env_id": "email"}


def bench(*tasks: Any, **extra: Any) -> dict[str, Any]:
    return {"name": "Test", "slug": "test", "tasks": list(tasks), **extra}


def verial(**changes: Any) -> dict[str, Any]:
    """The valid Verial task with top-level changes (None removes a key)."""
    task = copy.deepcopy(VERIAL)
    for key, value in changes.items():
        if value is None:
            task.pop(key, None)
        else:
            task[key] = value
    return task


def criterion(assertion: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"label": "Check", **extra, "assertion": assertion}


STATE = {"assert": "state_match", "correlate_by": {"resource": "requests", "key": "patient_id"},
         "assertions": [{"path": "status", "expected": "submitted"}]}


class Case(NamedTuple):
    data: Any
    expected: list[tuple[str, str]]
    """(path, substring of the message) of every problem, in any order."""
    files: MappingProxyType[str, str] = MappingProxyType({})


CASES: dict[str, Case] = {
    # --- the document and its header ---
    "not-a-mapping": Case([DEPLOY], [("$", "must be an object with a 'tasks' list")]),
    "no-tasks": Case(bench(), [("$.tasks", "the benchmark has no tasks")]),
    "tasks-not-a-list": Case(bench() | {"tasks": {"id": "a"}}, [("$.tasks", "tasks must be a list")]),
    "header-problems-all-at-once": Case(
        bench({"id": "a", "steps": [DEPLOY]}, slug="My Bench", concurency=4, epochs=0),
        [("$.slug", "should match pattern"), ("$.concurency", "unknown field 'concurency'"),
         ("$.epochs", "greater than or equal to 1")]),
    "defaults-typo": Case(bench({"id": "a", "steps": [DEPLOY]}, defaults={"judge": "m", "timeout_seconds": 0}),
                          [("$.defaults.judge", "unknown field 'judge'"),
                           ("$.defaults.timeout_seconds", "greater than 0")]),
    "infrastructure-policy-out-of-range": Case(
        bench({"id": "a", "steps": [DEPLOY]}, infrastructure={"retries": -1, "backoff_seconds": -2,
                                                                "max_error_rate": 1.5, "exclude_from_men": True}),
        [("$.infrastructure.retries", "greater than or equal to 0"),
         ("$.infrastructure.backoff_seconds", "greater than or equal to 0"),
         ("$.infrastructure.max_error_rate", "less than or equal to 1"),
         ("$.infrastructure.exclude_from_men", "unknown field 'exclude_from_men'")]),
    # --- step-document tasks ---
    "task-without-a-source": Case(bench({"id": "a", "tags": ["x"]}), [("$.tasks[0]", "a task needs path or steps")]),
    "task-not-an-object": Case(bench("a.json"), [("$.tasks[0]", "a task must be an object")]),
    "path-and-steps": Case(bench({"id": "a", "path": "t.json", "steps": [DEPLOY]}),
                           [("$.tasks[0]", "give exactly one of path")]),
    "bad-task-id": Case(bench({"id": "a b", "steps": [DEPLOY]}), [("$.tasks[0].id", "should match pattern")]),
    "missing-path-file": Case(bench({"id": "a", "path": "tasks/gone.json"}),
                              [("$.tasks[0].path", "cannot read the task document tasks/gone.json")]),
    "absolute-path": Case(bench({"id": "a", "path": "/etc/task.json"}), [("$.tasks[0].path", "is absolute")]),
    "invalid-step-in-a-path-file": Case(
        bench({"id": "a", "path": "t.json"}),
        [("$.tasks[0] (path t.json): $[1].startup_timeout", "unknown field 'startup_timeout'")],
        MappingProxyType({"t.json": json.dumps([DEPLOY, {"id": "records", "type": "deploy_env", "env_id": "records",
                                                         "startup_timeout": 5}])})),
    "path-file-that-does-not-parse": Case(bench({"id": "a", "path": "t.json"}),
                                          [("$.tasks[0] (path t.json): $", "invalid JSON")],
                                          MappingProxyType({"t.json": '[{"id": "email"\n "type": "deploy_env"}]'})),
    "inline-prompt-without-agent": Case(
        bench({"id": "a", "steps": [DEPLOY, {"id": "reply", "type": "prompt_agent", "agent_name": "assistant",
                                             "prompt_id": "reply", "prompt": "Hi"}]}),
        [("$.tasks[0].steps[1].agent_name", "agent 'assistant' is not provided by any ancestor step")]),
    "duplicate-task-ids": Case(bench({"id": "a", "steps": [DEPLOY]}, {"id": "a", "steps": [DEPLOY]}),
                               [("$.tasks[1].id", "duplicate task id 'a' (first used at $.tasks[0])")]),
    "duplicate-verial-names": Case(bench(verial(id=None), verial(id=None)),
                                   [("$.tasks[1].name", "duplicate task id 'prior-auth'")]),
    # --- seeds ---
    "seed-value-breaks-a-step": Case(
        bench({"id": "a", "steps": [DEPLOY, {"id": "t", "type": "sync_env_clock", "env_id": "email",
                                             "advance_seconds": "<delay>"}]}, seeds=[{"delay": 5}, {"delay": "soon"}]),
        [("$.tasks[0].steps[1].advance_seconds", "valid number")]),
    "seeds-not-rows": Case(bench(verial(), seeds="rows.csv"), [("$.seeds", "seeds must be a list of rows")]),
    "seed-value-not-scalar": Case(bench(verial(), seeds=[{"a": [1, 2]}]),
                                  [("$.seeds[0].a", "a seed value must be text, a number or a boolean")]),
    "seed-rows-with-other-columns": Case(bench(verial(), seeds=[{"a": 1}, {"b": 2}]),
                                         [("$.seeds[1]", "row 1 has columns ['b'] but row 0 has ['a']")]),
    "seed-column-with-a-dot": Case(bench(verial(), seeds=[{"ana.name": "Bo"}]),
                                   [("$.seeds", "seed column 'ana.name' cannot be a placeholder name")]),
    "missing-seeds-csv": Case(bench(verial(), seeds={"csv": "seeds.csv"}),
                              [("$.seeds.csv", "cannot read the seeds file seeds.csv")]),
    "ragged-seeds-csv": Case(bench(verial(), seeds={"csv": "s.csv"}),
                             [("$.seeds.csv", "s.csv line 3: 1 value(s) for 2 column(s)")],
                             MappingProxyType({"s.csv": "name,env\nDana,email\nLee\n"})),
    "empty-seeds-csv": Case(bench(verial(), seeds={"csv": "s.csv"}), [("$.seeds.csv", "the seeds file s.csv is empty")],
                            MappingProxyType({"s.csv": "\n"})),
    # --- tags ---
    "unknown-filter-tag": Case(bench(verial(), tags={"include_tags": ["recrods"], "exclude_tags": ["nightly"]}),
                               [("$.tags.include_tags[0]", "no task has the tag 'recrods'"),
                                ("$.tags.exclude_tags[0]", "no task has the tag 'nightly'")]),
    "filter-leaves-nothing": Case(bench(verial(), tags={"exclude_tags": ["records"]}),
                                  [("$.tags", "the tag filter leaves no task to run")]),
    # --- Verial-style tasks ---
    "verial-reply-criterion-without-task-item": Case(
        bench(verial(task_item=None, criteria=[criterion({"assert": "response-contains", "needles": ["ok"]})])),
        [("$.tasks[0].criteria[0].assertion.assert", "the task has no task_item")]),
    "verial-env-and-envs": Case(bench(verial(envs=[{"env_id": "email"}])), [("$.tasks[0]", "give one of env (one env) or envs")]),
    "verial-unknown-assert": Case(bench(verial(criteria=[criterion({"assert": "rubrik", "criterion": "Polite."})])),
                                  [("$.tasks[0].criteria[0].assertion.assert", "unknown assert 'rubrik'")]),
    "verial-missing-correlate-key": Case(
        bench(verial(criteria=[criterion({**STATE, "correlate_by": {"resource": "requests"}})])),
        [("$.tasks[0].criteria[0].assertion.correlate_by.key", "missing required field 'key'")]),
    "verial-assertion-field-typo": Case(
        bench(verial(criteria=[criterion({"assert": "record_count", "resource": "requests", "equal": 1})])),
        [("$.tasks[0].criteria[0].assertion.equal", "unknown field 'equal'")]),
    "verial-undefined-entity": Case(bench(verial(task_item={"instruction": "Call <bob.phone> about <ana.birth>."})),
                                    [("$.tasks[0].task_item.instruction", "entity 'bob' is referenced by <bob.phone>"),
                                     ("$.tasks[0].task_item.instruction", "entity 'ana' has no field 'birth'")]),
    "verial-unknown-input-entity": Case(bench(verial(criteria=[criterion(STATE, input_entity_id="anna")])),
                                        [("$.tasks[0].criteria[0].input_entity_id", "entity 'anna' is not defined")]),
    "verial-entity-without-the-correlation-key": Case(
        bench(verial(entities=[{"id": "ana", "name": "Ana Diaz"}], criteria=[criterion(STATE, input_entity_id="ana")])),
        [("$.tasks[0].criteria[0].assertion.correlate_by.key", "entity 'ana' has no field 'patient_id'")]),
    "verial-input-entity-on-a-rubric": Case(
        bench(verial(criteria=[criterion({"assert": "rubric", "criterion": "Polite."}, input_entity_id="ana")])),
        [("$.tasks[0].criteria[0].input_entity_id", "scopes state_match, voice_transcript and fax_content")]),
    "verial-several-envs-unnamed": Case(
        bench(verial(env=None, envs=[{"env_id": "records"}, {"env_id": "email"}],
                     criteria=[criterion({"assert": "record_count", "resource": "sent", "equals": 1})])),
        [("$.tasks[0].criteria[0].assertion.env_id", "the task has several envs")]),
    "verial-scenario-unknown-env-and-entity": Case(
        bench(verial(scenario={"steps": [{"action": "drop_inbox_document", "env_id": "recrods", "entity_id": "fax"}]})),
        [("$.tasks[0].scenario.steps[0].env_id", "env 'recrods' is not one of the task's envs"),
         ("$.tasks[0].scenario.steps[0].entity_id", "entity 'fax' is not defined")]),
    "verial-duplicate-criterion-ids": Case(
        bench(verial(criteria=[criterion(STATE, id="done"),
                               criterion({"assert": "rubric", "criterion": "x"}, id="done")])),
        [("$.tasks[0].criteria[1].id", "duplicate criterion id 'done'")]),
    "verial-response-check-without-weight": Case(
        bench(verial(criteria=[criterion({"assert": "response_contains", "needles": ["REQ"]}, weight=0)])),
        [("$.tasks[0].criteria[0].weight", "a response check needs a weight above 0")]),
    "verial-penalties-alone-on-an-env": Case(
        bench(verial(criteria=[criterion(STATE, weight=-1), criterion({"assert": "rubric", "criterion": "x"})])),
        [("$.tasks[0].criteria[0].weight", "this penalty would never count: no criterion on the state of env")]),
    "verial-penalties-alone-on-the-rubric": Case(
        bench(verial(criteria=[criterion(STATE), criterion({"assert": "rubric", "criterion": "x"}, weight=-2)])),
        [("$.tasks[0].criteria[1].weight", "no criterion on the rubric has a positive weight")]),
    "verial-two-agents": Case(
        bench(verial(env={"env_id": "records", "a2a_agent_id": "llm"}, agent={"a2a_agent_id": "scripted"})),
        [("$.tasks[0].env.a2a_agent_id", "a2a_agent_id 'llm' conflicts with 'scripted'")]),
}

HINTS = {
    "header-problems-all-at-once": ("$.concurency", "did you mean 'concurrency'?"),
    "invalid-step-in-a-path-file": ("$.tasks[0] (path t.json): $[1].startup_timeout",
                                    "did you mean 'startup_timeout_seconds'?"),
    "verial-unknown-assert": ("$.tasks[0].criteria[0].assertion.assert", "did you mean 'rubric'?"),
    "verial-assertion-field-typo": ("$.tasks[0].criteria[0].assertion.equal", "did you mean 'equals'?"),
    "verial-undefined-entity": ("$.tasks[0].task_item.instruction", "did you mean 'birth_date'?"),
    "verial-unknown-input-entity": ("$.tasks[0].criteria[0].input_entity_id", "did you mean 'ana'?"),
    "verial-scenario-unknown-env-and-entity": ("$.tasks[0].scenario.steps[0].env_id", "did you mean 'records'?"),
    "unknown-filter-tag": ("$.tags.include_tags[0]", "did you mean 'records'?"),
    "missing-path-file": ("$.tasks[0].path", "relative to the benchmark file"),
}


def validate(case: Case, tmp_path: Path) -> list[Problem]:
    for name, text in case.files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    result = validate_benchmark_data(case.data, tmp_path)
    assert not result.ok and result.benchmark is None and result.tasks == []
    return result.problems


def describe(problems: list[Problem]) -> str:
    return "\n".join(f"  {p.render()}" for p in problems)


def test_there_are_at_least_twelve_invalid_benchmarks() -> None:
    assert len(CASES) >= 12


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_invalid_benchmark_reports_exactly_its_problems_at_their_paths(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    problems = validate(case, tmp_path)

    for path, text in case.expected:
        assert any(p.path == path and text in p.message for p in problems), \
            f"{name}: {path}: {text!r} not reported; reported:\n{describe(problems)}"
    assert len(problems) == len(case.expected), f"{name}: unexpected problems:\n{describe(problems)}"
    assert all(p.path.startswith("$") and p.severity == "error" for p in problems)


@pytest.mark.parametrize("name", sorted(HINTS))
def test_the_problem_says_how_to_fix_it(name: str, tmp_path: Path) -> None:
    path, hint = HINTS[name]
    problems = validate(CASES[name], tmp_path)

    assert any(p.path == path and hint in (p.hint or "") for p in problems), \
        f"{name}: no hint {hint!r} at {path}:\n{describe(problems)}"


def test_a_benchmark_file_that_does_not_parse_reports_the_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bench.yaml"
    path.write_text("name: x\nslug: x\ntasks:\n  - id: a\n   path: t.json\n", encoding="utf-8")

    [problem] = validate_benchmark_file(path).problems
    assert "invalid YAML" in problem.message and problem.line == 5


def test_a_problem_met_with_every_seed_row_is_reported_once(tmp_path: Path) -> None:
    data = bench({"id": "a", "steps": [{"id": "reply", "type": "prompt_agent", "agent_name": "<who>",
                                        "prompt_id": "reply", "prompt": "Hi"}]}, seeds=[{"who": "x"}, {"who": "x"}])

    problems = validate(Case(data, []), tmp_path)
    assert [p.path for p in problems] == ["$.tasks[0].steps[0].agent_name"]


def test_problems_of_the_header_tasks_and_seeds_are_all_listed_together(tmp_path: Path) -> None:
    data = bench({"id": "a", "path": "gone.json"}, verial(criteria=[criterion(STATE, input_entity_id="bob")]),
                 slug="Bad Slug", seeds={"csv": "gone.csv"})

    paths = sorted(p.path for p in validate(Case(data, []), tmp_path))
    assert paths == ["$.seeds.csv", "$.slug", "$.tasks[0].path", "$.tasks[1].criteria[0].input_entity_id"]


def test_a_misspelt_trigger_action_of_a_reference_env_is_a_warning_not_a_problem(tmp_path: Path) -> None:
    data = bench(verial(scenario={"steps": [{"action": "drop_inbox_doc", "data": {"patient_id": "P1"}}]}))

    result = validate_benchmark_data(data, tmp_path)
    assert result.ok, describe(result.problems)
    [warning] = result.warnings
    assert warning.path == "$.tasks[0].scenario.steps[0].action"
    assert "did you mean 'drop_inbox_document'?" in (warning.hint or "")
