"""Entities: the records a Verial-style task is bound to, and their ``<entity.field>`` placeholders.

An entity ``{id: ana, patient_id: P1, insurance: {payer: Acme}}`` makes ``<ana.patient_id>`` and
``<ana.insurance.payer>`` available everywhere in its task except the entities themselves. A
criterion's ``input_entity_id`` scopes a state_match to the entity: when ``correlate_by.value``
is omitted it is the entity's field named by ``correlate_by.key``.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from prefect_agentenv.documents.benchmarks.document import Entity, VerialTask
from prefect_agentenv.documents.loading import fill_placeholders
from prefect_agentenv.documents.problems import Problem
from prefect_agentenv.jsontypes import JsonObject, JsonValue

_ENTITY_REF = re.compile(r"<([A-Za-z_][A-Za-z0-9_-]*)\.([A-Za-z0-9_.-]+)>")


def entity_values(entities: list[Entity]) -> JsonObject:
    """``{"ana.name": "Ana Diaz", "ana.insurance.payer": ...}``: every field, nested ones dotted."""
    values: JsonObject = {}

    def walk(prefix: str, value: JsonValue) -> None:
        values[prefix] = value
        if isinstance(value, dict):
            for key, item in value.items():
                walk(f"{prefix}.{key}", item)

    for entity in entities:
        for key, value in entity.fields().items():
            walk(f"{entity.id}.{key}", value)
    return values


def entity_field(entity: Entity, dotted: str) -> JsonValue:
    """An entity's field by dotted path (None when absent)."""
    return entity_values([entity]).get(f"{entity.id}.{dotted}")


def bind_entities(task: VerialTask, path: str) -> tuple[VerialTask | None, list[Problem]]:
    """Fill ``<entity.field>`` everywhere in the task but its entities; report unknown references."""
    raw = task.model_dump(mode="json", by_alias=True, exclude_unset=True)
    entities = raw.pop("entities", [])
    filled = fill_placeholders(raw, entity_values(task.entities))
    known = {e.id: e for e in task.entities}
    problems = [_unbound(m, where, known) for where, text in _strings(filled, path)
                for m in _ENTITY_REF.finditer(text)]
    if problems:
        return None, problems
    return VerialTask.model_validate({**filled, "entities": entities}), []


def _unbound(match: re.Match[str], where: str, known: dict[str, Entity]) -> Problem:
    entity_id, name = match.group(1), match.group(2)
    if entity_id not in known:
        close = difflib.get_close_matches(entity_id, list(known), n=1)
        hint = f"did you mean '{close[0]}'?" if close else (
            f"known entities: {', '.join(known)}" if known else "define it under entities: [{id: ..., fields...}]")
        return Problem(f"entity '{entity_id}' is referenced by {match.group(0)} but not defined",
                       path=where, hint=hint)
    fields = sorted(entity_values([known[entity_id]]))
    names = [f.split(".", 1)[1] for f in fields]
    close = difflib.get_close_matches(name, names, n=1)
    return Problem(f"entity '{entity_id}' has no field '{name}'", path=where,
                   hint=f"did you mean '{close[0]}'?" if close else f"its fields: {', '.join(names) or 'none'}")


def _strings(value: Any, path: str) -> list[tuple[str, str]]:
    """(JSON path, text) of every string in a value."""
    if isinstance(value, str):
        return [(path, value)]
    if isinstance(value, list):
        return [s for i, item in enumerate(value) for s in _strings(item, f"{path}[{i}]")]
    if isinstance(value, dict):
        return [s for key, item in value.items() for s in _strings(item, f"{path}.{key}")]
    return []


def referenced_entity_ids(task: VerialTask) -> list[str]:
    """Entity ids the task uses outside its entities: scenario actions, criteria, ``<id.field>``."""
    ids = [a.entity_id for a in (task.scenario.steps if task.scenario else []) if a.entity_id]
    ids += [c.input_entity_id for c in task.criteria if c.input_entity_id]
    raw = task.model_dump(mode="json", by_alias=True, exclude_unset=True)
    raw.pop("entities", None)
    ids += [m.group(1) for _, text in _strings(raw, "$") for m in _ENTITY_REF.finditer(text)]
    return list(dict.fromkeys(ids))


def find_entity(task: VerialTask, entity_id: str | None) -> Entity | None:
    """The task's entity with this id (None when there is none)."""
    return next((e for e in task.entities if e.id == entity_id), None) if entity_id else None


def unknown_entity(entity_id: str, entity_ids: list[str], where: str) -> Problem:
    """An entity id that names no entity of the task."""
    close = difflib.get_close_matches(entity_id, entity_ids, n=1)
    hint = f"did you mean '{close[0]}'?" if close else (
        f"known entities: {', '.join(entity_ids)}" if entity_ids else "define it under entities")
    return Problem(f"entity '{entity_id}' is not defined", path=where, hint=hint)
