"""Validating benchmark documents: every problem at once, each at its JSON path with a fix hint.

The header, every task and the seeds are checked independently, so one mistake does not hide
another; then each valid task is loaded or compiled and validated as a task document with every
seed row it uses (see :mod:`prefect_agentenv.documents.compile` for how those problems are
pointed back at the benchmark).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from prefect_agentenv.documents.benchmarks.document import (
    Benchmark,
    BenchmarkDefaults,
    BenchmarkHeader,
    BenchmarkTask,
    Seeds,
    StepDocumentTask,
    TagFilter,
    VerialTask,
    is_benchmark_data,
    task_kind,
)
from prefect_agentenv.documents.benchmarks.linked import DatasetReader, Linked
from prefect_agentenv.documents.compile import (
    ExpandContext,
    ExpandedTask,
    Expansion,
    duplicate_task_ids,
    expand_task,
    linked_of,
    model_problem,
    select_tasks,
)
from prefect_agentenv.documents.loading import ParseError, read_document
from prefect_agentenv.documents.problems import Problem
from prefect_agentenv.documents.seeds import load_seed_rows
from prefect_agentenv.documents.validation import ValidationResult, validate_data
from prefect_agentenv.exceptions import TaskDocumentError
from prefect_agentenv.jsontypes import JsonObject

_TASK_MODELS: dict[str, type[BaseModel]] = {"StepDocumentTask": StepDocumentTask, "VerialTask": VerialTask}


@dataclass
class BenchmarkValidationResult:
    """The outcome of validating a benchmark document."""

    benchmark: Benchmark | None
    tasks: list[ExpandedTask] = field(default_factory=list)
    """The tasks it runs (after the tag filter, crossed with the seeds); empty when invalid."""
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def raise_for_problems(self, source: str | None = None) -> Benchmark:
        if self.problems or self.benchmark is None:
            raise TaskDocumentError(self.problems, source)
        return self.benchmark


def validate_benchmark_file(path: str | Path) -> BenchmarkValidationResult:
    """Read and validate a benchmark file (task paths and seeds are relative to its folder)."""
    try:
        data = read_document(path)
    except ParseError as exc:
        return BenchmarkValidationResult(None, problems=[exc.problem])
    except OSError as exc:
        return BenchmarkValidationResult(None, problems=[Problem(f"cannot read the file: {exc.strerror or exc}")])
    return validate_benchmark_data(data, Path(path).parent)


def load_benchmark(path: str | Path) -> Benchmark:
    """Read a benchmark file, validate it and every task it names, and return it.

    Raises:
        TaskDocumentError: the benchmark or one of its tasks has problems (all of them are listed).
    """
    return validate_benchmark_file(path).raise_for_problems(str(path))


def validate_benchmark_data(data: Any, base_dir: str | Path, *,
                            datasets: DatasetReader | None = None) -> BenchmarkValidationResult:
    """Validate parsed benchmark data; ``base_dir`` is where its relative paths start.

    Args:
        datasets: reads the dataset artifacts entities bind to (the configured artifact store
            when omitted).
    """
    if not is_benchmark_data(data):
        return BenchmarkValidationResult(None, problems=[Problem(
            "a benchmark document must be an object with a 'tasks' list",
            hint="write {name: ..., slug: ..., tasks: [{id: ..., path: ...}, ...]}")])
    header, problems = _header(data)
    tasks, task_problems = _tasks(data["tasks"])
    problems += task_problems
    defaults, seeds, tag_filter = _settings(data, header)
    rows, seed_problems = load_seed_rows(seeds, Path(base_dir))
    problems += seed_problems
    expansion = Expansion()
    ctx = ExpandContext(defaults, Path(base_dir), rows, linked_of(header, datasets) if header else Linked())
    for i, task in tasks:
        expansion.extend(expand_task(task, i, ctx))
    selected, tag_problems = select_tasks(expansion.tasks, tag_filter, {t for _, task in tasks for t in task.tags})
    complete = not (task_problems or expansion.problems)
    problems += list(dict.fromkeys(expansion.problems)) + duplicate_task_ids(tasks)  # a shared dataset: once
    if complete:  # a task that failed to load may have the tag the filter names
        problems += tag_problems
    if header is not None and header.task_runs_as == "tasks":
        problems += _pauses_in_tasks(selected)
    if problems:
        return BenchmarkValidationResult(None, problems=problems, warnings=expansion.warnings)
    return BenchmarkValidationResult(Benchmark.model_validate(data), selected, [], expansion.warnings)


def _pauses_in_tasks(tasks: list[ExpandedTask]) -> list[Problem]:
    """A review pauses its flow run; a task run recorded as a task shares the benchmark's."""
    return [Problem(f"task {task.task_id!r}: a review step pauses its flow run, and with task_runs_as: tasks "
                    "every task run shares the benchmark's", path="$.task_runs_as", step_id=step.id,
                    hint="write task_runs_as: subflows for a benchmark whose tasks are reviewed")
            for task in tasks for step in task.document.steps if step.type == "review"]


def _header(data: JsonObject) -> tuple[BenchmarkHeader | None, list[Problem]]:
    problems: list[Problem] = []
    if isinstance(data["tasks"], list) and not data["tasks"]:
        problems.append(Problem("the benchmark has no tasks", path="$.tasks", hint="add at least one task"))
    elif not isinstance(data["tasks"], list):
        problems.append(Problem("tasks must be a list", path="$.tasks",
                                hint=f"got {type(data['tasks']).__name__}; write tasks: [{{id: ..., path: ...}}]"))
    try:
        return BenchmarkHeader.model_validate({k: v for k, v in data.items() if k != "tasks"}), problems
    except ValidationError as exc:
        return None, problems + [model_problem(e, "$", BenchmarkHeader) for e in exc.errors()]


def _settings(data: JsonObject, header: BenchmarkHeader | None) -> tuple[BenchmarkDefaults, Any, TagFilter]:
    """Defaults, seeds and tag filter, each on its own when the rest of the header is invalid, so the
    tasks and seeds are still checked (their own problems are already reported with the header's)."""
    if header is not None:
        return header.defaults, header.seeds, header.tags
    return (_alone(BenchmarkDefaults, data.get("defaults") or {}, BenchmarkDefaults()),
            _alone(Seeds, data.get("seeds"), None), _alone(TagFilter, data.get("tags") or {}, TagFilter()))


def _alone(kind: Any, value: Any, fallback: Any) -> Any:
    try:
        return TypeAdapter(kind).validate_python(value)
    except ValidationError:
        return fallback


def _tasks(raw_tasks: Any) -> tuple[list[tuple[int, BenchmarkTask]], list[Problem]]:
    """Each task validated with its own model; returns the valid ones with their index."""
    if not isinstance(raw_tasks, list):
        return [], []
    valid: list[tuple[int, BenchmarkTask]] = []
    problems: list[Problem] = []
    for i, raw in enumerate(raw_tasks):
        path = f"$.tasks[{i}]"
        kind = task_kind(raw)
        if kind is None:
            problems.append(Problem(
                "a task must be an object" if not isinstance(raw, dict) else
                "a task needs path or steps (a step document) or task_item (a Verial-style task)", path=path,
                hint="write {id: ..., path: task.json}, {id: ..., steps: [...]} or {name: ..., task_item: ..., ...}"))
            continue
        model = _TASK_MODELS[kind]
        try:
            valid.append((i, model.model_validate(raw)))  # type: ignore[arg-type]
        except ValidationError as exc:
            problems += [model_problem(e, path, model) for e in exc.errors()]
    return valid, problems


def validate_any_file(path: str | Path) -> ValidationResult | BenchmarkValidationResult:
    """Validate a task document or a benchmark document, told apart by a top-level ``tasks`` mapping."""
    try:
        data = read_document(path)
    except ParseError as exc:
        return ValidationResult(None, list(exc.problems))
    except OSError as exc:
        return ValidationResult(None, [Problem(f"cannot read the file: {exc.strerror or exc}")])
    if is_benchmark_data(data):
        return validate_benchmark_data(data, Path(path).parent)
    return validate_data(data, default_id=Path(path).stem)
