"""Benchmark tasks as runnable task documents: files loaded, Verial-style tasks compiled, seeds crossed.

:func:`expand_tasks` is what a benchmark run iterates over: one :class:`ExpandedTask` per task
and seed row, each holding a validated :class:`TaskDocument`. A task is crossed with the seed
rows only when it uses a seed column as a ``<placeholder>``; the others run once. Epochs are
the runner's business and are not expanded here.

Every problem is reported at the benchmark's JSON path that caused it: a loaded file's
problems as ``$.tasks[0] (path tasks/t.json): $[2].agent_name``, inline steps' as
``$.tasks[1].steps[3].agent_name``, and a compiled task's at the criterion, scenario action or
entity it came from.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Required, TypedDict

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.artifacts.datasets import Dataset, read_dataset
from prefect_agentenv.attribute_docs import attribute_docstrings
from prefect_agentenv.documents.benchmarks.document import (
    Benchmark,
    BenchmarkDefaults,
    BenchmarkHeader,
    BenchmarkTask,
    DatasetRef,
    StepDocumentTask,
    TagFilter,
    VerialTask,
)
from prefect_agentenv.documents.benchmarks.linked import DatasetReader, Linked
from prefect_agentenv.documents.loading import ParseError, fill_placeholders, read_document
from prefect_agentenv.documents.models import TaskDocument
from prefect_agentenv.documents.problems import Problem
from prefect_agentenv.documents.scoring import ScoringConfig, SkipPolicy, apply_skip_defaults, merge_scoring
from prefect_agentenv.documents.seeds import SeedRow, load_seed_rows, placeholder_names
from prefect_agentenv.documents.validation import _from_pydantic as pydantic_problem  # one wording for both kinds
from prefect_agentenv.documents.validation import validate_data
from prefect_agentenv.documents.verial.compile import CompiledTask, CriterionRef, compile_verial
from prefect_agentenv.documents.verial.criteria import ASSERT_KINDS
from prefect_agentenv.exceptions import TaskDocumentError
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.steps.base import StepModel


class ExpandedTask(BaseModel):
    """One task with one seed row, ready to run."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=attribute_docstrings)

    task_id: str
    """The task's id, with ``[seed=N]`` when it is crossed with the seed rows (also the document's id)."""
    base_id: str
    """The task's id in the benchmark."""
    document: TaskDocument
    tags: list[str] = Field(default_factory=list)
    """The task's tags and its document's."""
    timeout_seconds: float
    """Time limit of one run of the task."""
    seed_row: dict[str, str] | None = None
    """The seed values filled into the document; None when the task uses no seed column."""
    seed_index: int = 0
    """Index of the seed row (0 when the task uses none)."""
    weight: float = 1.0
    """Weight of the task in the benchmark's mean score."""
    criteria: list[CriterionRef] = Field(default_factory=list)
    """A Verial-style task's criteria: where each one's score lands (label, axis, verifier, row)."""
    source: str | None = None
    """The task document file, relative to the benchmark, for a path task."""


@dataclass
class Expansion:
    """Expanded tasks and everything wrong with them."""

    tasks: list[ExpandedTask] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)

    def extend(self, other: Expansion) -> None:
        self.tasks += other.tasks
        self.problems += other.problems
        self.warnings += other.warnings


@dataclass(frozen=True)
class ExpandContext:
    """What every task's expansion needs from the benchmark."""

    defaults: BenchmarkDefaults
    base_dir: Path
    seed_rows: list[SeedRow]
    linked: Linked = field(default_factory=Linked)
    """The benchmark's envs and dataset, for Verial-style tasks."""


def store_reader() -> DatasetReader:
    """Reads datasets from the configured artifact store, each (id, version) once."""
    cache: dict[tuple[str, str | None], Dataset] = {}

    def read(ref: DatasetRef) -> Dataset:
        key = (ref.artifact_id, ref.version)
        if key not in cache:
            with get_artifact_store() as store:
                cache[key] = read_dataset(store, ref.artifact_id, ref.version)
        return cache[key]

    return read


def linked_of(header: BenchmarkHeader, read: DatasetReader | None = None) -> Linked:
    """What the benchmark lends its Verial-style tasks (datasets read from the artifact store)."""
    envs = [header.env] if header.env is not None else list(header.envs or [])
    return Linked(envs=envs, dataset=header.dataset, read=read or store_reader())


def expand_tasks(benchmark: Benchmark, base_dir: str | Path) -> list[ExpandedTask]:
    """The tasks the benchmark runs: loaded, compiled, filtered by tag and crossed with the seeds.

    Args:
        base_dir: the benchmark file's folder (task paths and the seeds CSV are relative to it).

    Raises:
        TaskDocumentError: a task or the seeds have problems (all of them are listed).
    """
    expansion = expand_benchmark(benchmark, base_dir)
    if expansion.problems:
        raise TaskDocumentError(expansion.problems)
    return expansion.tasks


def expand_benchmark(benchmark: Benchmark, base_dir: str | Path) -> Expansion:
    """Like :func:`expand_tasks`, returning the problems instead of raising."""
    rows, seed_problems = load_seed_rows(benchmark.seeds, Path(base_dir))
    ctx = ExpandContext(benchmark.defaults, Path(base_dir), rows, linked_of(benchmark))
    out = Expansion(problems=seed_problems)
    for i, task in enumerate(benchmark.tasks):
        out.extend(expand_task(task, i, ctx))
    out.problems = list(dict.fromkeys(out.problems))  # a problem of a shared dataset is listed once
    out.problems += duplicate_task_ids([(i, t) for i, t in enumerate(benchmark.tasks)])
    selected, tag_problems = select_tasks(out.tasks, benchmark.tags, _entry_tags(benchmark.tasks))
    out.tasks, out.problems = selected, out.problems + tag_problems
    return out


def compile_verial_task(task: VerialTask, defaults: BenchmarkDefaults | None = None,
                        linked: Linked | None = None) -> TaskDocument:
    """Compile one Verial-style task to a validated task document.

    Args:
        linked: the benchmark's envs and dataset; a dataset is read from the artifact store.

    Raises:
        TaskDocumentError: the task has problems (paths are relative to the task: ``$.criteria[0]…``).
    """
    if linked is not None and linked.read is None:
        linked = replace(linked, read=store_reader())
    compiled = compile_verial(task, defaults=defaults, linked=linked)
    if compiled.problems:
        raise TaskDocumentError(compiled.problems)
    result = validate_data(compiled.document)
    return result.raise_for_problems()


# -- one task -----------------------------------------------------------------------------------


def expand_task(task: BenchmarkTask, index: int, ctx: ExpandContext) -> Expansion:
    """One task crossed with the seed rows it uses; problems found with several rows are listed once."""
    path = f"$.tasks[{index}]"
    if isinstance(task, VerialTask):
        raw: Any = task.model_dump(mode="json", by_alias=True, exclude_unset=True)
        expand_one = _verial_expander(task, raw, path, ctx)
    else:
        loaded = _document_data(task, path, ctx.base_dir)
        if isinstance(loaded, Problem):
            return Expansion(problems=[loaded])
        raw = loaded
        expand_one = _document_expander(task, raw, path, ctx)
    columns = set(ctx.seed_rows[0]) if ctx.seed_rows else set()
    uses_seeds = bool(columns & placeholder_names(raw))
    base_id = task.id if isinstance(task, StepDocumentTask) else task.task_id()
    out = Expansion()
    runs = list(enumerate(ctx.seed_rows)) if uses_seeds else [(0, None)]
    for seed_index, row in runs:
        task_id = f"{base_id}[seed={seed_index}]" if row is not None else base_id
        out.extend(expand_one(task_id, base_id, seed_index, row))
    out.problems, out.warnings = _unique(out.problems), _unique(out.warnings)
    return out


def _unique(problems: list[Problem]) -> list[Problem]:
    return list(dict.fromkeys(problems))


def _document_data(task: StepDocumentTask, path: str, base_dir: Path) -> Any:
    """The task's steps as written: inline, or read from its file (a Problem when unreadable)."""
    if task.steps is not None:
        return {"id": task.id, "steps": task.steps}
    assert task.path is not None
    if Path(task.path).is_absolute():
        return Problem(f"the task path {task.path!r} is absolute", path=f"{path}.path",
                       hint="write it relative to the benchmark file, so the benchmark runs anywhere")
    try:
        return read_document(base_dir / task.path)
    except ParseError as exc:
        return replace(exc.problem, path=f"{path} (path {task.path}): {exc.problem.path}")
    except OSError as exc:
        return Problem(f"cannot read the task document {task.path}: {exc.strerror or exc}", path=f"{path}.path",
                       hint="the path is relative to the benchmark file")


def _document_expander(task: StepDocumentTask, raw: Any, path: str, ctx: ExpandContext) -> Any:
    where = f"{path} (path {task.path}): " if task.path is not None else None

    def repath(p: Problem) -> Problem:
        return replace(p, path=where + p.path if where else path + p.path[1:])

    def expand_one(task_id: str, base_id: str, seed_index: int, row: SeedRow | None) -> Expansion:
        result = validate_data(raw, default_id=base_id, seeds=row or {})
        out = Expansion(problems=[repath(p) for p in result.problems], warnings=[repath(p) for p in result.warnings])
        if result.document is None:
            return out
        doc = result.document
        tags = list(dict.fromkeys([*task.tags, *doc.tags]))
        policy = task.skip_policy or ("skip_policy" in doc.model_fields_set and doc.skip_policy) \
            or ctx.defaults.skip_policy or doc.skip_policy
        doc = doc.model_copy(update={"id": task_id, "tags": tags, "description": task.description or doc.description,
                                     **scoring_update(doc, policy, ctx.defaults.scoring, doc.scoring, task.scoring)})
        out.tasks.append(ExpandedTask(task_id=task_id, base_id=base_id, document=doc, tags=tags,
                                      timeout_seconds=task.timeout_seconds or ctx.defaults.timeout_seconds,
                                      seed_row=row, seed_index=seed_index, weight=task.weight, source=task.path))
        return out

    return expand_one


def _verial_expander(task: VerialTask, raw: JsonObject, path: str, ctx: ExpandContext) -> Any:
    def expand_one(task_id: str, base_id: str, seed_index: int, row: SeedRow | None) -> Expansion:
        try:
            seeded = VerialTask.model_validate(fill_placeholders(raw, row or {}))
        except ValidationError as exc:
            return Expansion(problems=[model_problem(e, path, VerialTask) for e in exc.errors()])
        compiled = compile_verial(seeded, defaults=ctx.defaults, path=path, task_id=task_id, linked=ctx.linked)
        if compiled.problems:
            return Expansion(problems=compiled.problems, warnings=compiled.warnings)
        return _validated_compiled(compiled, task, task_id, base_id, seed_index, row, ctx)

    return expand_one


def _validated_compiled(compiled: CompiledTask, task: VerialTask, task_id: str, base_id: str, seed_index: int,
                        row: SeedRow | None, ctx: ExpandContext) -> Expansion:
    result = validate_data(compiled.document)
    out = Expansion(problems=[compiled.repath(p) for p in result.problems],
                    warnings=compiled.warnings + [compiled.repath(p) for p in result.warnings])
    if result.document is not None:
        policy = task.skip_policy or ctx.defaults.skip_policy or result.document.skip_policy
        document = result.document.model_copy(update=scoring_update(result.document, policy, ctx.defaults.scoring,
                                                                     task.scoring))
        out.tasks.append(ExpandedTask(task_id=task_id, base_id=base_id, document=document,
                                      tags=list(result.document.tags),
                                      timeout_seconds=task.timeout or ctx.defaults.timeout_seconds,
                                      seed_row=row, seed_index=seed_index, weight=task.weight,
                                      criteria=compiled.criteria))
    return out


def scoring_update(document: TaskDocument, policy: SkipPolicy, *layers: ScoringConfig | None) -> ScoringUpdate:
    """The document's skip policy and scoring in a benchmark: the layers (the benchmark's default,
    the document's, the task's) merged, later ones winning; their skip_on_* defaults go onto the
    verifiers that set none."""
    scoring = merge_scoring(*layers)
    if scoring is None:
        return {"skip_policy": policy}
    steps = apply_skip_defaults(list(document.steps), scoring)
    scoring.skip_policy = policy
    return {"skip_policy": policy, "scoring": scoring, "steps": steps}


class ScoringUpdate(TypedDict, total=False):
    """The fields of a task document a benchmark's scoring layers replace (a ``model_copy`` update)."""

    skip_policy: Required[SkipPolicy]
    scoring: ScoringConfig
    steps: list[StepModel]


def model_problem(err: Any, path: str, model: type[BaseModel]) -> Problem:
    """A pydantic error as a problem, worded for a benchmark rather than a step.

    A wrong or missing ``assert`` (the tag that picks the assertion model) is reported at the
    ``assert`` key itself, with the known kinds, instead of pydantic's wording about tags.
    """
    kind, ctx = err["type"], err.get("ctx") or {}
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        key = str(ctx.get("discriminator", "")).split("|")[-1].strip(" '") or "type"
        key = "assert" if key in ("assert_kind()", "assert_") else key
        where = pydantic_problem({**err, "type": "value_error", "msg": ""}, path, None, model).path + f".{key}"
        expected = [t.strip(" '") for t in str(ctx.get("expected_tags", "")).split(",") if t.strip()] or \
            list(ASSERT_KINDS if key == "assert" else [])
        if kind == "union_tag_not_found":
            return Problem(f"missing required field '{key}'", path=where, hint=f"one of: {', '.join(expected)}")
        tag = str(ctx.get("tag"))
        close = difflib.get_close_matches(tag, expected, n=1)
        return Problem(f"unknown {key} '{tag}'", path=where,
                       hint=f"did you mean '{close[0]}'?" if close else f"one of: {', '.join(expected)}")
    problem = pydantic_problem(err, path, None, model)
    if problem.hint and problem.hint.endswith(" to the step"):
        problem = replace(problem, hint=problem.hint.removesuffix(" to the step") + " here")
    return problem


# -- across tasks -------------------------------------------------------------------------------


def duplicate_task_ids(tasks: list[tuple[int, BenchmarkTask]]) -> list[Problem]:
    """Task ids name runs and results: each must be unique (a Verial task without id uses its name)."""
    first: dict[str, int] = {}
    problems = []
    for i, task in tasks:
        task_id = task.id if isinstance(task, StepDocumentTask) else task.task_id()
        if task_id not in first:
            first[task_id] = i
            continue
        named_by = "id" if task.id is not None else "name"
        problems.append(Problem(f"duplicate task id '{task_id}' (first used at $.tasks[{first[task_id]}])",
                                path=f"$.tasks[{i}].{named_by}", hint="give every task its own id"))
    return problems


def _entry_tags(tasks: list[BenchmarkTask]) -> set[str]:
    return {tag for t in tasks for tag in t.tags}


def select_tasks(tasks: list[ExpandedTask], tag_filter: TagFilter,
                 extra_known: set[str] | None = None) -> tuple[list[ExpandedTask], list[Problem]]:
    """The tasks the filter keeps; a filter tag that no task has is a problem (likely a typo)."""
    known = sorted({tag for t in tasks for tag in t.tags} | (extra_known or set()))
    problems = []
    for name in ("include_tags", "exclude_tags"):
        for k, tag in enumerate(getattr(tag_filter, name)):
            if tag not in known:
                close = difflib.get_close_matches(tag, known, n=1)
                problems.append(Problem(f"no task has the tag '{tag}'", path=f"$.tags.{name}[{k}]",
                                        hint=f"did you mean '{close[0]}'?" if close else
                                        f"known tags: {', '.join(known) or 'none'}"))
    include, exclude = set(tag_filter.include_tags), set(tag_filter.exclude_tags)
    selected = [t for t in tasks if (not include or include & set(t.tags)) and not exclude & set(t.tags)]
    if tasks and not selected and not problems:
        problems.append(Problem("the tag filter leaves no task to run", path="$.tags",
                                hint="loosen include_tags or exclude_tags"))
    return selected, problems
