"""The agent-task flow's ``task`` parameter: a document, a list of steps, a path, or an artifact id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.exceptions import TaskDocumentError
from prefect_agentenv.flows.adapters.task_parameter import TaskParameter, resolve_task_parameter

pytestmark = pytest.mark.usefixtures("agentenv_home")

STEPS = [{"id": "work", "type": "test_noop", "depends_on": []}, {"id": "grade", "type": "test_score"}]
PARAMETER = TypeAdapter(TaskParameter)


def test_a_document_and_a_bare_list_of_steps_are_both_accepted() -> None:
    from_object = resolve_task_parameter(PARAMETER.validate_python({"id": "t1", "tags": ["a"], "steps": STEPS}))
    from_list = resolve_task_parameter(PARAMETER.validate_python(STEPS))
    assert (from_object.id, from_object.tags, [s.id for s in from_object.steps]) == ("t1", ["a"], ["work", "grade"])
    assert [s.id for s in from_list.steps] == ["work", "grade"]


def test_a_path_on_the_worker_is_read_and_validated(tmp_path: Path) -> None:
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(STEPS))
    assert resolve_task_parameter(PARAMETER.validate_python(str(path))).id == "mine"


def test_an_artifact_id_with_or_without_a_version_reads_the_document_from_the_store() -> None:
    with get_artifact_store() as store:
        store.publish_files("nightly-task", {"task.yaml": json.dumps({"id": "from-store", "steps": STEPS}).encode()})
    assert resolve_task_parameter("nightly-task").id == "from-store"
    assert resolve_task_parameter("nightly-task@1").id == "from-store"


def test_a_string_that_names_nothing_says_what_it_may_be() -> None:
    with pytest.raises(TaskDocumentError, match="neither a task document file on this worker nor"):
        resolve_task_parameter("no-such-task")


def test_an_invalid_list_lists_its_problems_with_the_step_id() -> None:
    with pytest.raises(TaskDocumentError, match="grade"):
        resolve_task_parameter(PARAMETER.validate_python(
            [{"id": "work", "type": "test_noop"}, {"id": "grade", "type": "test_score", "depends_on": ["nope"]}]))


def test_a_document_the_command_validated_is_not_checked_again_and_one_from_input_is() -> None:
    from prefect_agentenv.documents.validation import validate_data

    validated = validate_data({"id": "t", "steps": STEPS}).raise_for_problems()
    assert validated.graph_checked and resolve_task_parameter(validated) is validated
    from prefect_agentenv.documents.models import TaskDocument
    unchecked = TaskDocument.model_validate({"id": "t", "steps": STEPS})
    assert unchecked == validated, "being checked is not part of what a document says (a resume compares them)"
    assert unchecked != unchecked.model_copy(update={"skip_policy": "exclude"})

    dangling = PARAMETER.validate_python({"id": "t", "steps": [*STEPS, {"id": "late", "type": "test_noop",
                                                                         "depends_on": ["nowhere"]}]})
    assert not dangling.graph_checked, "a document from a form or the API is never taken as checked"
    with pytest.raises(TaskDocumentError, match="nowhere"):
        resolve_task_parameter(dangling)
