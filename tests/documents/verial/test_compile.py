"""Verial-style tasks as Verial writes them: validation, compilation and datasets (no step runs
here; tests/flows/test_verial_seed_run.py runs them against the records env)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from prefect_agentenv.artifacts.datasets import Dataset, DatasetError, parse_dataset
from prefect_agentenv.documents.benchmarks.document import DatasetRef
from prefect_agentenv.documents.benchmarks.validation import validate_benchmark_data

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
DATASET = parse_dataset([("clinic-dataset.json", (EXAMPLES / "artifacts" / "clinic-dataset.json").read_bytes())])

SEED_TASK: dict[str, Any] = {  # the two request bodies of the seed, merged
    "benchmark_id": "bench_1", "name": "Submit prior auth for lumbar MRI",
    "task_item": {"instruction": "Submit a prior authorization for MRI of the lumbar spine",
                  "trigger": "Inbound referral fax in the SFTP inbox"},
    "scenario": {"steps": [{"at_sec": 0, "action": "drop_file_inbox", "entity_id": "ent_referral_1",
                            "inbound_path": "inbox/"}]},
    "tags": ["prior-auth", "imaging"],
    "criteria": [{"task_id": "task_1", "label": "Prior auth submitted with correct CPT", "weight": 1.0,
                  "axis": "correctness",
                  "assertion": {"assert": "portal-state-match",
                                "correlate_by": {"resource": "prior_auth_requests", "key": "request_id"},
                                "assertions": [{"path": "status", "expected": "submitted"},
                                               {"path": "cpt_code", "expected": "72148"}]}}],
}


def bench(*tasks: dict[str, Any], **header: Any) -> dict[str, Any]:
    return {"name": "B", "slug": "b", "env": {"env_id": "records"}, "dataset": "clinic-dataset",
            "tasks": list(tasks), **header}


def validate(data: dict[str, Any]) -> Any:
    """Validate with the example dataset standing in for the artifact store."""
    return validate_benchmark_data(data, EXAMPLES, datasets=_read)


def _read(ref: DatasetRef) -> Dataset:
    if ref.artifact_id != "clinic-dataset":
        raise DatasetError(f"no artifact '{ref.artifact_id}'")
    return DATASET


def steps(result: Any, index: int = 0) -> dict[str, dict[str, Any]]:
    return {s.id: s.model_dump(mode="json", by_alias=True, exclude_unset=True) for s in result.tasks[index].document.steps}


def test_the_seed_task_validates_and_keeps_every_field_of_the_anatomy_table() -> None:
    result = validate(bench(SEED_TASK, defaults={"timeout_seconds": 900}))
    assert result.ok, [p.render() for p in result.problems]
    [task] = result.tasks
    assert task.task_id == "submit-prior-auth-for-lumbar-mri"                  # name
    assert task.document.description == "Submit prior auth for lumbar MRI"
    assert task.tags == ["prior-auth", "imaging"]                              # tags
    assert task.timeout_seconds == 900                                         # timeout: null -> default
    found = steps(result)
    assert found["prompt"]["prompt"].startswith("Submit a prior authorization")  # task_item
    assert "Trigger: Inbound referral fax in the SFTP inbox" in found["prompt"]["prompt"]
    assert found["prompt"]["depends_on"] == ["agent", "scenario-1"]            # scenario before the agent
    assert found["scenario-1"]["triggers"][0]["action"] == "drop_file_inbox"
    assert found["scenario-1"]["triggers"][0]["data"]["inbound_path"] == "inbox/"
    assert found["dataset"]["entity_ids"] == ["ent_referral_1"]                # entities -> dataset rows
    assert task.criteria[0].label == "Prior auth submitted with correct CPT"   # criteria
    assert found["state"]["assertions"][0]["assert"] == "state_match"


def test_a_task_timeout_overrides_the_benchmark_default() -> None:
    result = validate(bench({**SEED_TASK, "timeout": 120}))
    assert result.tasks[0].timeout_seconds == 120


def test_hyphenated_assertion_names_are_accepted_and_an_unknown_one_is_named() -> None:
    task = copy.deepcopy(SEED_TASK)
    task["criteria"] += [
        {"label": "Count", "assertion": {"assert": "record-count", "resource": "inbox", "at_least": 1}},
        {"label": "Said", "assertion": {"assert": "response-contains", "needles": ["submitted"]}},
        {"label": "Bad", "assertion": {"assert": "portal-state-mach", "correlate_by": {"resource": "r", "key": "k"}}}]
    result = validate(bench(task))
    assert [(p.path, p.message) for p in result.problems] == [
        ("$.tasks[0].criteria[3].assertion.assert", "unknown assert 'portal_state_mach'")]


def test_the_benchmark_env_is_the_default_and_a_task_env_wins() -> None:
    task = {**SEED_TASK, "env": {"env_id": "records", "artifact_id": "clinic"}}
    result = validate(bench(SEED_TASK, task | {"name": "Other"}))
    assert steps(result, 0)["env"]["env_id"] == "records" and "seed" not in steps(result, 0)
    assert steps(result, 1)["seed"]["artifact_id"] == "clinic"
    assert steps(result, 1)["dataset"]["reset"] is False  # added to the env's own artifact


def test_a_task_without_an_env_anywhere_is_a_problem() -> None:
    data = bench(SEED_TASK)
    del data["env"], data["dataset"]
    result = validate(data)
    assert [(p.path, p.message) for p in result.problems] == [
        ("$.tasks[0].env", "the task names no env and the benchmark has none")]


def test_an_unreadable_dataset_is_reported_at_the_dataset() -> None:
    result = validate(bench(SEED_TASK, dataset="clinic-gone"))
    assert [p.path for p in result.problems] == ["$.dataset"]
    assert "dataset 'clinic-gone' cannot be read" in result.problems[0].message


def test_an_env_level_dataset_binds_entities_of_that_env() -> None:
    data = bench({**SEED_TASK, "env": {"env_id": "records", "dataset": {"artifact_id": "clinic-dataset"}}})
    del data["dataset"]
    assert steps(validate(data))["dataset"]["entity_ids"] == ["ent_referral_1"]


def test_entity_fields_come_from_the_dataset_row_and_inline_fields_win() -> None:
    task = {**SEED_TASK, "entities": [{"entity_id": "ent_patient_1", "name": "A. Diaz"}],
            "task_item": {"instruction": "Authorize the MRI of <ent_patient_1.name> (<ent_patient_1.mrn>)."}}
    result = validate(bench(task))
    assert steps(result)["prompt"]["prompt"].startswith("Authorize the MRI of A. Diaz (MRN-001).")
    assert steps(result)["dataset"]["entity_ids"] == ["ent_patient_1", "ent_referral_1"]


def test_an_entity_in_neither_the_task_nor_the_dataset_is_a_problem() -> None:
    task = copy.deepcopy(SEED_TASK)
    task["scenario"]["steps"][0]["entity_id"] = "ent_referral_9"
    result = validate(bench(task))
    assert [p.path for p in result.problems] == ["$.tasks[0].scenario.steps[0].entity_id"]


def test_binding_scopes_the_dataset_to_the_bound_rows_those_sharing_their_ids_and_reference_rows() -> None:
    scoped = DATASET.scoped(["ent_referral_1"])
    assert [p["patient_id"] for p in scoped["patients"]] == ["P1"]
    assert [r["referral_id"] for r in scoped["referrals"]] == ["R1"]
    assert [line["number"] for line in scoped["phone_lines"]] == ["+1 555 0200"]


def test_task_item_is_loose_and_null_means_no_prompt() -> None:
    loose = {**SEED_TASK, "task_item": {"instruction": "Do it.", "priority": "urgent", "payer": {"name": "Acme"}}}
    assert steps(validate(bench(loose)))["prompt"]["prompt"] == \
        'Do it.\n\nPriority: urgent\nPayer: {"name": "Acme"}'
    silent = validate(bench({**SEED_TASK, "task_item": None}))
    assert "prompt" not in steps(silent)
    assert steps(silent)["state"]["depends_on"] == ["agent", "scenario-1"]
