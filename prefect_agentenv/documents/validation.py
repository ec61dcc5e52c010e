"""Validating task documents: every problem at once, each with step id, JSON path and a fix hint."""

from __future__ import annotations

import difflib
import os
import types
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from prefect_agentenv.documents.graph import ancestor_masks, find_cycle, is_ancestor, resolve_dependencies
from prefect_agentenv.documents.loading import ParseError, env_var_names, fill_placeholders, read_document
from prefect_agentenv.documents.models import TaskDocument
from prefect_agentenv.documents.problems import Problem, json_path
from prefect_agentenv.exceptions import TaskDocumentError
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.steps.base import FieldError, NameKind, StepModel
from prefect_agentenv.steps.registry import all_steps, unknown_type_message

_KIND_WORDS = {
    "env": ("env_id", "a deploy_env step with env_id"),
    "agent": ("agent_name", "a deploy_agent step with agent_name"),
    "prompt": ("prompt_id", "a prompt_agent step with prompt_id"),
    "verifier": ("verifier_id", "a verifier step with verifier_id"),
    "collect": ("step id", "a collect_artifacts step with this id"),
    "sandbox": ("sandbox_name", "a deploy_sandbox step with sandbox_name"),
}


@dataclass
class ValidationResult:
    """The outcome of validating one document."""

    document: TaskDocument | None
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    """Warnings and notices (``severity`` tells them apart)."""

    @property
    def ok(self) -> bool:
        return not self.problems

    def raise_for_problems(self, source: str | None = None) -> TaskDocument:
        if self.problems or self.document is None:
            raise TaskDocumentError(self.problems, source)
        return self.document


def validate_file(path: str | Path, seeds: Mapping[str, Any] | None = None) -> ValidationResult:
    """Read and validate a task document file."""
    try:
        data = read_document(path)
    except ParseError as exc:
        return ValidationResult(None, list(exc.problems))
    except OSError as exc:
        return ValidationResult(None, [Problem(f"cannot read the file: {exc.strerror or exc}")])
    return validate_data(data, default_id=Path(path).stem, seeds=seeds)


def load_task(path: str | Path, seeds: Mapping[str, Any] | None = None) -> TaskDocument:
    """Read a task document file, validate it and return it.

    Raises:
        TaskDocumentError: the document has problems (all of them are listed).
    """
    return validate_file(path, seeds).raise_for_problems(str(path))


def validate_data(data: Any, *, default_id: str = "task", seeds: Mapping[str, Any] | None = None) -> ValidationResult:
    """Validate parsed document data (a list of steps or ``{id, steps}``)."""
    data = fill_placeholders(data, seeds or {})
    header, raw_steps, prefix, problems = _split(data, default_id)
    if raw_steps is None:
        return ValidationResult(None, problems)
    steps: list[StepModel | None] = []
    warnings: list[Problem] = []
    for i, raw in enumerate(raw_steps):
        step, step_problems = _validate_step(raw, f"{prefix}[{i}]")
        steps.append(step)
        problems += step_problems
        if step is not None and step.ignored_fields:
            warnings.append(_ignored_warning(step, f"{prefix}[{i}]"))
        if step is not None:
            warnings += [Problem(n, path=f"{prefix}[{i}]", step_id=step.id, severity="notice") for n in step.notices]
    problems += _check_graph(raw_steps, steps, prefix)
    warnings += unset_env_var_warnings(raw_steps, prefix)
    if problems:
        return ValidationResult(None, problems, warnings)
    try:
        doc = TaskDocument.model_validate({**header, "steps": [s for s in steps if s is not None]})
    except ValidationError as exc:  # a check across the header and the steps (scoring.mode isolated)
        return ValidationResult(None, [_document_problem(e) for e in exc.errors()], warnings)
    doc._graph_checked = True
    return ValidationResult(doc, [], warnings)


def _document_problem(err: Any) -> Problem:
    field = (err.get("ctx") or {}).get("field")
    if field:
        return Problem(str((err.get("ctx") or {}).get("why", err["msg"])), path=f"$.{field}")
    return _from_pydantic(err, "$", None, TaskDocument)


def unset_env_var_warnings(raw_steps: list[Any], prefix: str = "$",
                           environ: Mapping[str, str] | None = None) -> list[Problem]:
    """A warning per step naming each ``${VAR}`` (without a default) that is not set here.

    A warning, not an error: the document may be meant for another machine. A run on this one
    refuses to start with any of them unset (before anything is deployed).
    """
    env = os.environ if environ is None else environ
    warnings: list[Problem] = []
    for i, raw in enumerate(raw_steps):
        missing = sorted(name for name in env_var_names(raw) if name not in env)
        if missing:
            names = ", ".join(f"${{{n}}}" for n in missing)
            warnings.append(Problem(f"environment variable(s) not set here: {names}", path=f"{prefix}[{i}]",
                                    step_id=_raw_id(raw), severity="warning",
                                    hint="set them before running, or write ${NAME:-default}"))
    return warnings


def _split(data: Any, default_id: str) -> tuple[JsonObject, list[Any] | None, str, list[Problem]]:
    if isinstance(data, list):
        return {"id": default_id}, data, "$", _empty_check(data, "$")
    if isinstance(data, dict) and isinstance(data.get("steps"), list):
        header = {k: v for k, v in data.items() if k != "steps"}
        header.setdefault("id", default_id)
        problems: list[Problem] = []
        try:
            TaskDocument.model_validate({**header, "steps": [{"type": "__placeholder__"}]})
        except ValidationError as exc:
            for err in exc.errors():
                if err["loc"] and err["loc"][0] != "steps":
                    problems.append(_from_pydantic(err, "$", None, TaskDocument))
        return header, data["steps"], "$.steps", problems + _empty_check(data["steps"], "$.steps")
    return {}, None, "$", [
        Problem(
            "a task document must be a list of steps or an object with a 'steps' list",
            hint='write [{"id": "...", "type": "...", ...}, ...] or {"id": "...", "steps": [...]}',
        )
    ]


def _empty_check(steps: list[Any], path: str) -> list[Problem]:
    return [Problem("the task has no steps", path=path, hint="add at least one step")] if not steps else []


def _validate_step(raw: Any, path: str) -> tuple[StepModel | None, list[Problem]]:
    if not isinstance(raw, dict):
        return None, [Problem("a step must be an object", path=path, hint='write {"id": ..., "type": ...}')]
    step_id = raw.get("id") if isinstance(raw.get("id"), str) else None
    step_type = raw.get("type")
    known = all_steps()
    if not isinstance(step_type, str):
        return None, [Problem("the step has no 'type'", path=f"{path}.type", step_id=step_id,
                              hint=f"set type to one of: {', '.join(known)}")]
    if step_type not in known:
        return None, [Problem(unknown_type_message(step_type, list(known)), path=f"{path}.type", step_id=step_id)]
    definition = known[step_type]
    try:
        step = definition.model.model_validate(raw)
    except ValidationError as exc:
        return None, [_from_pydantic(e, path, step_id, definition.model) for e in exc.errors()]
    return step, _duplicate_item_ids(step, path)


def resolved_value_errors(exc: ValidationError) -> str:
    """What a step's fields refuse once its ``${VAR}``s are resolved (checked as written at validation)."""
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'the step'}: {str(e['msg']).removeprefix('Value error, ')}"
                     for e in exc.errors())


def _from_pydantic(err: Any, path: str, step_id: str | None, model: type[BaseModel]) -> Problem:
    error = (err.get("ctx") or {}).get("error")
    raw_loc = tuple(err["loc"]) + (error.loc if isinstance(error, FieldError) else ())
    loc, _ = _walk_loc(model, raw_loc)
    where = json_path(path, loc)
    if err["type"] == "extra_forbidden":
        name = str(loc[-1])
        choices = _field_names_at(model, raw_loc[:-1])
        close = difflib.get_close_matches(name, choices, n=1)
        hint = f"did you mean '{close[0]}'?" if close else f"known fields: {', '.join(sorted(choices))}"
        return Problem(f"unknown field '{name}'", path=where, step_id=step_id, hint=hint)
    if err["type"] == "missing":
        return Problem(f"missing required field '{loc[-1]}'", path=where, step_id=step_id,
                       hint=f"add '{loc[-1]}' to the step")
    message = str(err["msg"]).removeprefix("Value error, ")
    fix = error.hint if isinstance(error, FieldError) and error.hint else _hint_for(err)
    return Problem(message, path=where, step_id=step_id, hint=fix)


def _hint_for(err: Any) -> str | None:
    kind = str(err["type"])
    if kind.endswith("_type") or kind.endswith("_parsing"):
        return f"got {type(err.get('input')).__name__} {err.get('input')!r}"
    if kind == "literal_error":
        return None
    return None


def _field_names_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """Field names of the (nested) model at a location, for did-you-mean hints."""
    _, current = _walk_loc(model, loc)
    if current is None or not hasattr(current, "model_fields"):
        return []
    names = [f.alias or n for n, f in current.model_fields.items()]
    extra = [*getattr(current, "accepted_but_ignored", ()), *getattr(current, "hosted_only", ()),
             *getattr(current, "reference_aliases", {})]
    return names + extra


def _walk_loc(model: type[BaseModel], loc: tuple[Any, ...]) -> tuple[tuple[Any, ...], type[BaseModel] | None]:
    """Follow a pydantic error location through the model's fields.

    Pydantic puts the chosen union member in error locations (``str``, ``DependsOnRef``, a
    discriminator value such as ``state_match``); those are not keys of the document, so they are
    dropped from the returned location. Also returns the model found at the end, if any.
    """
    clean: list[Any] = []
    current: Any = model
    for part in loc:
        members = _union_members(current)
        if len(members) > 1 and isinstance(part, str):
            current = _member_for_tag(members, part)
            continue
        clean.append(part)
        if current is None:
            continue
        if isinstance(part, int):
            current = _item_type(current)
            continue
        found = _model_in(current) if not (isinstance(current, type) and issubclass(current, BaseModel)) else current
        info = None
        if found is not None:
            info = next((f for n, f in found.model_fields.items() if part in (n, f.alias)), None)
        current = info.annotation if info else None
    end = current if isinstance(current, type) and issubclass(current, BaseModel) else None
    if end is None and current is not None and len(_union_members(current)) <= 1:
        end = _model_in(current)
    return tuple(clean), end


def _unwrap(tp: Any) -> Any:
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    return tp


def _union_members(tp: Any) -> list[Any]:
    """The non-None members of a union annotation ([] when it is not a union)."""
    tp = _unwrap(tp)
    if get_origin(tp) in (Union, types.UnionType):
        return [a for a in get_args(tp) if a is not type(None)]
    return []


def _member_for_tag(members: list[Any], tag: str) -> Any:
    for member in members:
        m = _unwrap(member)
        if isinstance(m, type) and issubclass(m, BaseModel):
            if m.__name__ == tag or any(tag in get_args(_unwrap(f.annotation)) for f in m.model_fields.values()):
                return m
        elif getattr(m, "__name__", None) == tag or str(m) == tag:
            return m
    return None


def _item_type(tp: Any) -> Any:
    tp = _unwrap(tp)
    members = _union_members(tp)
    if len(members) == 1:
        tp = _unwrap(members[0])
    args = get_args(tp)
    if get_origin(tp) in (list, tuple, set, frozenset) and args:
        return args[0]
    if get_origin(tp) is dict and len(args) == 2:
        return args[1]
    return None


def _model_in(annotation: Any) -> type[BaseModel] | None:
    stack = [annotation]
    while stack:
        tp = stack.pop()
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            return tp
        stack.extend(getattr(tp, "__args__", ()) or ())
    return None


def _duplicate_item_ids(step: StepModel, path: str) -> list[Problem]:
    """Lists of items with ids (criteria, checks, assertions) must not repeat an id."""
    problems: list[Problem] = []
    for name in type(step).model_fields:
        value = getattr(step, name)
        if not isinstance(value, list):
            continue
        seen: dict[str, int] = {}
        for i, item in enumerate(value):
            item_id = getattr(item, "id", None)
            if not isinstance(item_id, str):
                continue
            if item_id in seen:
                problems.append(Problem(
                    f"duplicate id '{item_id}' in {name} (first at {name}[{seen[item_id]}])",
                    path=f"{path}.{name}[{i}].id", step_id=step.id, hint="give every entry its own id"))
            else:
                seen[item_id] = i
    return problems


def _ignored_warning(step: StepModel, path: str) -> Problem:
    names = ", ".join(step.ignored_fields)
    return Problem(f"accepted but not acted on by this runner: {names}", path=path, step_id=step.id,
                   hint="remove them to silence this warning", severity="warning")


def _check_graph(raw_steps: list[Any], steps: list[StepModel | None], prefix: str) -> list[Problem]:
    """Ids, dependencies, cycles, and names each step needs from its ancestors."""
    problems: list[Problem] = []
    ids: list[str] = []
    declared: list[list[str] | None] = []
    index: dict[str, int] = {}
    for i, raw in enumerate(raw_steps):
        raw_id = raw.get("id") if isinstance(raw, dict) else None
        if not isinstance(raw_id, str) or not raw_id:
            if isinstance(raw, dict) and "id" not in raw and steps[i] is None:
                pass  # the model already reported the missing id
            ids.append(f"#{i}")
            declared.append(None)
            continue
        if raw_id in index:
            problems.append(Problem(f"duplicate step id '{raw_id}' (first used at {prefix}[{index[raw_id]}])",
                                    path=f"{prefix}[{i}].id", step_id=raw_id, hint="give every step a unique id"))
            ids.append(f"{raw_id}#{i}")
        else:
            index[raw_id] = i
            ids.append(raw_id)
        declared.append(_declared_deps(raw))
    for i, dep_list in enumerate(declared):
        for j, dep in enumerate(dep_list or []):
            if dep not in index:
                close = difflib.get_close_matches(dep, list(index), n=1)
                hint = f"did you mean '{close[0]}'?" if close else f"known step ids: {', '.join(index)}"
                problems.append(Problem(f"depends on unknown step '{dep}'", path=f"{prefix}[{i}].depends_on[{j}]",
                                        step_id=_raw_id(raw_steps[i]), hint=hint))
    deps = resolve_dependencies(ids, [[d for d in (dl or []) if d in index] if dl is not None else None
                                      for dl in declared])
    cycle = find_cycle(deps)
    if cycle:
        first = ids.index(cycle[0])
        problems.append(Problem(f"dependency cycle: {' -> '.join(cycle)}", path=f"{prefix}[{first}].depends_on",
                                step_id=_raw_id(raw_steps[first]), hint="remove one of these dependencies"))
        return problems
    problems += _check_names(ids, steps, deps, prefix, raw_steps)
    return problems


def _raw_id(raw: Any) -> str | None:
    """The step's own id as written (graph keys of duplicated steps carry a ``#index`` suffix)."""
    raw_id = raw.get("id") if isinstance(raw, dict) else None
    return raw_id if isinstance(raw_id, str) and raw_id else None


def _declared_deps(raw: JsonObject) -> list[str] | None:
    dep = raw.get("depends_on")
    if dep is None:
        return None
    if not isinstance(dep, list):
        return []
    out = []
    for d in dep:
        if isinstance(d, str):
            out.append(d)
        elif isinstance(d, dict) and isinstance(step_id := d.get("task_step_id"), str):
            out.append(step_id)
    return out


def _check_names(ids: list[str], steps: list[StepModel | None], deps: dict[str, list[str]], prefix: str,
                 raw_steps: list[Any]) -> list[Problem]:
    problems: list[Problem] = []
    providers: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, step in enumerate(steps):
        for kind, name, loc in _provided(step, raw_steps[i]):
            first = providers[(kind, name)]
            if first and kind in ("env", "agent", "prompt", "verifier"):
                problems.append(_second_provider(kind, name, json_path(f"{prefix}[{i}]", loc), _raw_id(raw_steps[i]),
                                                 _raw_id(raw_steps[first[0]])))
            first.append(i)
    position, masks = ancestor_masks(deps)
    for i, step in enumerate(steps):
        if step is None:
            continue
        for kind, name, loc in step.required():
            owners = providers.get((kind, name), [])
            if any(is_ancestor(position, masks, ids[o], ids[i]) for o in owners):
                continue
            field_name, what = _KIND_WORDS[kind]
            if owners:
                owner = _raw_id(raw_steps[owners[0]])
                hint = f"step '{owner}' provides it but is not an ancestor: add it to depends_on"
            else:
                known = sorted({n for (k, n) in providers if k == kind})
                hint = f"add {what} '{name}' before this step" + (f" (known: {', '.join(known)})" if known else "")
            problems.append(Problem(f"{kind} '{name}' is not provided by any ancestor step",
                                    path=json_path(f"{prefix}[{i}]", loc), step_id=step.id, hint=hint))
        if step.retry_config:
            start = step.retry_config.retry_from_step_id
            if start != step.id and not is_ancestor(position, masks, start, ids[i]):
                problems.append(Problem(f"retry_from_step_id '{start}' is not this step or one of its ancestors",
                                        path=f"{prefix}[{i}].retry_config.retry_from_step_id", step_id=step.id,
                                        hint="retry from this step or from a step it depends on"))
    return problems


def _provided(step: StepModel | None, raw: Any) -> list[tuple[NameKind, str, tuple[str | int, ...]]]:
    """What a step provides; for a step that failed validation, read from its raw fields, so that
    its dependents are not also told that no ancestor provides the name."""
    if step is not None:
        return step.provided()
    if not (isinstance(raw, dict) and isinstance(raw.get("type"), str) and isinstance(raw.get("id"), str)):
        return []
    definition = all_steps().get(raw["type"])
    if definition is None:
        return []
    try:
        return definition.model.model_construct(**raw).provided()
    except Exception:  # noqa: BLE001 - best effort on a step that is already reported invalid
        return []


def _second_provider(kind: str, name: str, path: str, step_id: str | None, first_id: str | None) -> Problem:
    message = {
        "env": f"Env '{name}' is already deployed",
        "agent": f"Agent with name '{name}' is already deployed",
        "prompt": f"prompt_id '{name}' is already used",
        "verifier": f"verifier_id '{name}' is already used",
    }[kind]
    return Problem(message, path=path, step_id=step_id, hint=f"step '{first_id}' already uses it; pick another name")
