"""Checks of a Verial-style task that need the whole task: names it uses must exist in it."""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Sequence

from prefect_agentenv.documents.benchmarks.document import TaskItem, VerialTask
from prefect_agentenv.documents.problems import Problem
from prefect_agentenv.documents.verial.criteria import (
    FaxContentCheck,
    ResponseContainsCheck,
    RubricCheck,
    StateCheck,
    StateMatchCheck,
    TaskCriterion,
    VoiceTranscriptCheck,
)
from prefect_agentenv.documents.verial.entities import entity_field, find_entity, unknown_entity

REFERENCE_TRIGGER_ACTIONS = {"records": ("drop_file_inbox", "drop_inbox_document", "leave_voicemail",
                                         "post_hl7_message"),
                             "email": ("deliver_email",)}
"""Trigger actions of the reference envs, so a misspelt action is flagged before anything runs
(an env registered under another id is only checked when its triggers are registered)."""


def prompt_text(item: TaskItem | None) -> str:
    """The instruction, then the trigger, the expected inputs and any other member as context lines
    ("" when there is nothing to say: the agent is not prompted)."""
    if item is None:
        return ""
    context = []
    if item.trigger:
        context.append(f"Trigger: {item.trigger.strip()}")
    if item.expected_inputs:
        inputs = item.expected_inputs if isinstance(item.expected_inputs, str) else "; ".join(item.expected_inputs)
        context.append(f"Expected inputs: {inputs.strip()}")
    for key, value in (item.model_extra or {}).items():
        shown = value.strip() if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        context.append(f"{key.replace('_', ' ').capitalize()}: {shown}")
    head = [item.instruction.strip()] if item.instruction and item.instruction.strip() else []
    return "\n\n".join([*head, *(["\n".join(context)] if context else [])])


def check_task(task: VerialTask, path: str) -> tuple[list[Problem], list[Problem]]:
    """Names a Verial task uses must exist in it: envs, entities, criterion ids, its agent."""
    problems: list[Problem] = []
    warnings: list[Problem] = []
    envs = task.all_envs()
    env_ids = [e.env_id for e in envs]
    env_path = f"{path}.env" if task.env is not None else f"{path}.envs"
    problems += _duplicates(env_ids, lambda i: f"{env_path}[{i}].env_id",
                            lambda name, first: f"Env '{name}' is already deployed (first at envs[{first}])")
    problems += _duplicates([e.id for e in task.entities], lambda i: f"{path}.entities[{i}].id",
                            lambda name, first: f"duplicate entity id '{name}' (first at entities[{first}])")
    problems += _duplicates([c.id for c in task.criteria], lambda i: f"{path}.criteria[{i}].id",
                            lambda name, first: f"duplicate criterion id '{name}' (first at criteria[{first}])")
    problems += _agent_conflicts(task, path)
    scenario_problems, warnings = _check_scenario(task, env_ids, path)
    problems += scenario_problems
    for j, c in enumerate(task.criteria):
        problems += _check_criterion(task, c, env_ids, f"{path}.criteria[{j}]")
    problems += _penalties_alone(task, path)
    return problems, warnings


def _penalties_alone(task: VerialTask, path: str) -> list[Problem]:
    """Criteria of one verifier (an env's state, or the rubric) that are all penalties: the verifier
    weighs its criteria's positive weights, 0 here, so the penalties would never touch the score."""
    groups: dict[str, list[int]] = {}
    for j, c in enumerate(task.criteria):
        if isinstance(c.assertion, StateCheck):
            groups.setdefault(f"the state of env '{c.assertion.env_id or '(the task env)'}'", []).append(j)
        elif isinstance(c.assertion, RubricCheck):
            groups.setdefault("the rubric", []).append(j)
    problems: list[Problem] = []
    for what, rows in groups.items():
        weights = [task.criteria[j].weight for j in rows]
        if any(w < 0 for w in weights) and not any(w > 0 for w in weights):
            first = next(j for j in rows if task.criteria[j].weight < 0)
            problems.append(Problem(
                f"this penalty would never count: no criterion on {what} has a positive weight, and a "
                "penalty only subtracts from those", path=f"{path}.criteria[{first}].weight",
                hint="add a criterion of positive weight of the same kind, or give this one a positive "
                     "weight and reverse what it expects"))
    return problems


def _duplicates(names: Sequence[str | None], where: Callable[[int], str],
                message: Callable[[str, int], str]) -> list[Problem]:
    seen: dict[str, int] = {}
    problems = []
    for i, name in enumerate(names):
        if name is None:
            continue
        if name in seen:
            problems.append(Problem(message(name, seen[name]), path=where(i), hint="give each its own name"))
        else:
            seen[name] = i
    return problems


def _agent_conflicts(task: VerialTask, path: str) -> list[Problem]:
    named = [(i, e.a2a_agent_id) for i, e in enumerate(task.all_envs()) if e.a2a_agent_id]
    chosen = task.agent.a2a_agent_id or (named[0][1] if named else None)
    env_path = f"{path}.env" if task.env is not None else f"{path}.envs"
    return [Problem(f"a2a_agent_id '{agent}' conflicts with '{chosen}': the task deploys one agent",
                    path=(env_path if task.env is not None else f"{env_path}[{i}]") + ".a2a_agent_id",
                    hint="name the agent once, under agent.a2a_agent_id")
            for i, agent in named if agent != chosen]


def _env_ref(env_id: str | None, env_ids: list[str], where: str, what: str) -> list[Problem]:
    if env_id is None:
        if len(env_ids) > 1:
            return [Problem(f"the task has several envs: say which one {what}", path=where,
                            hint=f"set env_id to one of: {', '.join(env_ids)}")]
        return []
    if env_id in env_ids:
        return []
    close = difflib.get_close_matches(env_id, env_ids, n=1)
    return [Problem(f"env '{env_id}' is not one of the task's envs", path=where,
                    hint=f"did you mean '{close[0]}'?" if close else f"the task's envs: {', '.join(env_ids)}")]


def _check_scenario(task: VerialTask, env_ids: list[str], path: str) -> tuple[list[Problem], list[Problem]]:
    problems: list[Problem] = []
    warnings: list[Problem] = []
    if task.scenario is None:
        return problems, warnings
    entity_ids = [e.id for e in task.entities]
    for n, action in enumerate(task.scenario.steps):
        where = f"{path}.scenario.steps[{n}]"
        problems += _env_ref(action.env_id, env_ids, f"{where}.env_id", "performs this action")
        if action.entity_id is not None and action.entity_id not in entity_ids:
            problems.append(unknown_entity(action.entity_id, entity_ids, f"{where}.entity_id"))
        env_id = action.env_id or (env_ids[0] if len(env_ids) == 1 else None)
        known = REFERENCE_TRIGGER_ACTIONS.get(env_id or "")
        if known and action.action not in known:
            close = difflib.get_close_matches(action.action, known, n=1)
            warnings.append(Problem(
                f"the reference env '{env_id}' has no trigger action '{action.action}'", path=f"{where}.action",
                hint=(f"did you mean '{close[0]}'?" if close else f"its actions: {', '.join(known)}")
                + " (an env registered under this id may have it)", severity="warning"))
    return problems, warnings


def _check_criterion(task: VerialTask, c: TaskCriterion, env_ids: list[str], where: str) -> list[Problem]:
    problems: list[Problem] = []
    check = c.assertion
    if isinstance(check, StateCheck):
        problems += _env_ref(check.env_id, env_ids, f"{where}.assertion.env_id", "this assertion reads")
    if isinstance(check, RubricCheck | ResponseContainsCheck) and not prompt_text(task.task_item):
        problems.append(Problem("this criterion reads the agent's reply, but the task has no task_item, so the "
                                "agent is not prompted", path=f"{where}.assertion.assert",
                                hint="give task_item an instruction, or check the env's state instead"))
    if isinstance(check, ResponseContainsCheck) and c.weight <= 0:
        problems.append(Problem("a response check needs a weight above 0", path=f"{where}.weight",
                                hint="it is scored as its own verifier; express a penalty as a rubric criterion"))
    if c.input_entity_id is None:
        return problems
    entity = find_entity(task, c.input_entity_id)
    if entity is None:
        return [*problems, unknown_entity(c.input_entity_id, [e.id for e in task.entities], f"{where}.input_entity_id")]
    if isinstance(check, VoiceTranscriptCheck | FaxContentCheck):
        if entity_field(entity, "patient_id") is None:
            problems.append(Problem(f"entity '{entity.id}' has no patient_id to scope the calls or faxes by",
                                    path=f"{where}.input_entity_id", hint="add patient_id to the entity"))
        return problems
    if not isinstance(check, StateMatchCheck):
        return [*problems, Problem("input_entity_id scopes state_match, voice_transcript and fax_content "
                                   "assertions only", path=f"{where}.input_entity_id",
                                   hint="remove it, or write the entity's values with <entity.field>")]
    if check.correlate_by.value is None and entity_field(entity, check.correlate_by.key) is None:
        problems.append(Problem(
            f"entity '{entity.id}' has no field '{check.correlate_by.key}' to correlate by",
            path=f"{where}.assertion.correlate_by.key",
            hint=f"add '{check.correlate_by.key}' to the entity, or give correlate_by.value"))
    return problems
