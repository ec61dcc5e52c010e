"""The ``task`` parameter of the agent-task flow, in every form a user may hand it over.

From the UI's Run form, ``prefect deployment run --param``/``--params`` or ``run_deployment``,
a task arrives as the document (``{id, steps}``), as a bare list of steps, or as a string: the
path of a task document (or of a Harbor task folder) on the worker, the id (``ID`` or
``ID@VERSION``) of a file artifact in the artifact store that holds one, or a task of a published benchmark version
(``SLUG@VERSION/TASK_ID``, how a fleet's benchmark hands its workers a published task: each
reads the frozen copy from the shared store). All become a validated :class:`TaskDocument`, or
a :class:`TaskDocumentError` listing every problem.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Union

from pydantic import Field

from prefect_agentenv.artifacts import ArtifactBackend, get_artifact_store
from prefect_agentenv.artifacts.models import ArtifactRef
from prefect_agentenv.documents.loading import ParseError, parse_text
from prefect_agentenv.documents.models import AnyStep, TaskDocument
from prefect_agentenv.documents.problems import Problem
from prefect_agentenv.documents.validation import validate_data, validate_file
from prefect_agentenv.exceptions import ArtifactError, TaskDocumentError

TaskParameter = Annotated[
    Union[TaskDocument, list[AnyStep], str],  # noqa: UP007 - the UI renders each branch as a choice
    Field(description="The task document ({id, steps}), a list of steps, or the path of a document on the "
                      "worker / the id of a file artifact holding one / a published benchmark's task as "
                      "SLUG@VERSION/TASK_ID."),
]


def resolve_task_parameter(task: TaskDocument | list[AnyStep] | str) -> TaskDocument:
    """The validated document ``task`` stands for.

    Raises:
        TaskDocumentError: the document is invalid, or the string names neither a file nor an artifact.
    """
    if isinstance(task, list):
        task = TaskDocument(steps=task)
    if isinstance(task, TaskDocument) and task.graph_checked:
        return task  # validated whole by the command that started this run, in this process
    if isinstance(task, TaskDocument):
        # The model checks each step; the graph (dependencies, names an ancestor provides) is checked here.
        data = task.model_dump(mode="json", by_alias=True, exclude_none=True)
        return validate_data(data, default_id=task.id).raise_for_problems(task.id)
    text = task.strip()
    if Path(text).is_file() or Path(text).is_dir():  # a document, or a Harbor task folder
        return validate_file(text).raise_for_problems(text)
    # Published versions load here, on the one path that reads them: they pull in the whole
    # benchmark side of the documents (~0.1 s of CPU), which a document or a file never needs.
    from prefect_agentenv.documents.published.snapshot import parse_published_task_ref

    with get_artifact_store() as store:
        published = parse_published_task_ref(text)
        if published is not None:
            return _from_published(store, *published)
        return _from_artifact(store, text)


def _from_published(store: ArtifactBackend, slug: str, version: str, task_id: str) -> TaskDocument:
    """A task of a published benchmark version, as it was frozen (checked against its hashes)."""
    from prefect_agentenv.documents.published.store import read_published  # see resolve_task_parameter

    try:
        task = read_published(store, slug, version).task(task_id)
    except (ArtifactError, KeyError) as exc:
        reason = f"it has no task {task_id!r}" if isinstance(exc, KeyError) else str(exc)
        raise TaskDocumentError([Problem(f"cannot read task {task_id!r} of published benchmark {slug}@{version}: "
                                         f"{reason}", hint="every worker must use the artifact store the "
                                                           "benchmark was published to")], "task") from None
    return validate_data(task.document, default_id=task_id).raise_for_problems(f"{slug}@{version}/{task_id}")


def _from_artifact(store: ArtifactBackend, text: str) -> TaskDocument:
    try:
        ref = ArtifactRef.parse(text)
        meta = store.get_metadata(ref.id, ref.version)
        data = store.read_file(meta)
    except (ArtifactError, ValueError) as exc:
        raise TaskDocumentError([Problem(
            f"{text!r} is neither a task document file on this worker nor a readable file artifact: {exc}",
            hint="pass the document itself, a path that exists where the flow runs, or publish it with "
                 "`prefect-agentenv artifact put ID FILE` and pass ID")], "task") from None
    try:
        parsed = parse_text(data.decode("utf-8"), meta.files[0].name)
    except (ParseError, UnicodeDecodeError) as exc:
        raise TaskDocumentError([Problem(f"artifact {meta.ref} is not a JSON/YAML document: {exc}")], "task") from None
    return validate_data(parsed, default_id=ref.id).raise_for_problems(str(meta.ref))
