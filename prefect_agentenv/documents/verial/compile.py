"""Compiling a Verial-style task (instruction, scenario, entities, typed criteria) to steps.

The mapping, with the step ids it produces (``-<env_id>`` is added when the task has several
envs; docs/benchmarks.md shows a full example)::

    env / envs             deploy_env `env`, then load_artifact `seed` when artifact_id is given,
                           then load_artifact `dataset` (the bound rows of the linked dataset)
    scenario               sync_env_clock `clock` (time = start_at) per env it touches, then per
                           action n: register_env_triggers `scenario-n` (at = start_at + at_sec)
                           and, when that is later than the env clock, sync_env_clock
                           `scenario-n-clock` advancing the clock to it, so the trigger fires
    agent                  deploy_agent `agent` (agent_name "agent", every env), started while
                           the envs are seeded
    task_item              prompt_agent `prompt` (prompt_id "prompt"), after the agent and the
                           whole setup: the scenario has run before the agent sees the task;
                           none when task_item is null (the verifiers wait for the setup)
    state criteria         env_state_verifier `state` per env, one row per criterion
    rubric criteria        rubrics_verifier `rubric`, one criterion each
    response criteria      agent_prompt_response_verifier `response` (`response-n` when several)

Every verifier aggregates with ``weighted_average`` and weighs the sum of its criteria's
positive weights, so the task score is the weighted mean of the criteria. Entities are bound
first (:mod:`prefect_agentenv.documents.verial.entities`), so every step sees their values.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import timedelta

from pydantic import BaseModel, ConfigDict

from prefect_agentenv.documents.benchmarks.document import BenchmarkDefaults, Entity, VerialTask, slugify
from prefect_agentenv.documents.benchmarks.linked import Bound, Linked, link
from prefect_agentenv.documents.problems import Problem
from prefect_agentenv.documents.verial.checks import check_task, prompt_text
from prefect_agentenv.documents.verial.criteria import (
    FaxContentCheck,
    ResponseContainsCheck,
    RubricCheck,
    StateCheck,
    StateMatchCheck,
    TaskCriterion,
    VoiceTranscriptCheck,
)
from prefect_agentenv.documents.verial.entities import bind_entities, entity_field, find_entity
from prefect_agentenv.jsontypes import JsonObject, JsonValue

DEFAULT_AGENT_ID = "llm"
"""The reference tool-using agent, deployed when neither the task nor the benchmark names one."""
AGENT_NAME = "agent"
PROMPT_ID = "prompt"


class CriterionRef(BaseModel):
    """Where a criterion's score lands in the run's verifications (for per-criterion reports)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    label: str
    weight: float
    axis: str | None = None
    verifier_id: str
    row_id: str | None = None
    """The row of the verification; None when the whole verifier is the criterion (response checks)."""


@dataclass
class CompiledTask:
    """A compiled task: the raw task document, and where each part came from in the benchmark."""

    document: JsonObject
    criteria: list[CriterionRef] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    origins: list[tuple[str, str]] = field(default_factory=list)
    """(path in the compiled document, path in the benchmark), longest match wins."""

    def repath(self, problem: Problem) -> Problem:
        """A problem of the compiled document, pointed at what the benchmark says."""
        best = max((o for o in self.origins if _under(problem.path, o[0])), key=lambda o: len(o[0]), default=None)
        if best is None:
            return replace(problem, path=f"{self.origins[0][1] if self.origins else '$'} (compiled): {problem.path}")
        return replace(problem, path=best[1] + problem.path[len(best[0]):])


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith((prefix + ".", prefix + "["))


class _Builder:
    """Accumulates steps and the origin of each."""

    def __init__(self) -> None:
        self.steps: list[JsonObject] = []
        self.origins: list[tuple[str, str]] = []

    def add(self, step: JsonObject, origin: str, parts: list[tuple[str, str]] | None = None) -> str:
        where = f"$.steps[{len(self.steps)}]"
        self.steps.append(step)
        self.origins.append((where, origin))
        self.origins.extend((where + sub, source) for sub, source in parts or [])
        return str(step["id"])


def compile_verial(task: VerialTask, *, defaults: BenchmarkDefaults | None = None, path: str = "$",
                   task_id: str | None = None, linked: Linked | None = None) -> CompiledTask:
    """Compile a Verial-style task to a raw task document (validate it with ``validate_data``).

    Args:
        defaults: the benchmark's defaults (agent id, models, timeout).
        path: the task's JSON path in the benchmark, for problems and the source map.
        task_id: the document's id (the task's id when omitted).
        linked: the benchmark's envs and dataset (and how to read the dataset).
    """
    defaults = defaults or BenchmarkDefaults()
    linked_task, link_problems = link(task, linked or Linked(), path)
    if linked_task is None:
        return CompiledTask({}, problems=link_problems)
    task = linked_task.task
    problems, warnings = check_task(task, path)
    bound, bind_problems = bind_entities(task, path)
    problems += bind_problems
    if problems or bound is None:
        return CompiledTask({}, problems=problems, warnings=warnings)
    b = _Builder()
    many = len(bound.all_envs()) > 1
    tails = _setup(b, bound, many, path, linked_task)
    env_steps = [_scoped("env", e.env_id, many) for e in bound.all_envs()]
    after = _agent_and_prompt(b, bound, defaults, path, env_steps, list(tails.values()))
    criteria = _verifiers(b, bound, defaults, many, path, after)
    document: JsonObject = {"id": task_id or bound.task_id(), "description": bound.name, "tags": [*bound.tags],
                            "steps": [*b.steps]}
    return CompiledTask(document, criteria, [], warnings, b.origins)


def _scoped(base: str, env_id: str, many: bool) -> str:
    return f"{base}-{env_id}" if many else base


# -- setup: envs, seed artifacts, scenario ----------------------------------------------------------


def _setup(b: _Builder, task: VerialTask, many: bool, path: str, linked: Bound) -> dict[str, str]:
    """Deploy and seed every env, then run the scenario; returns each env's last setup step."""
    tails: dict[str, str] = {}
    for i, env in enumerate(task.all_envs()):
        origin = f"{path}.env" if task.env is not None else f"{path}.envs[{i}]"
        step: JsonObject = {"id": _scoped("env", env.env_id, many), "type": "deploy_env", "env_id": env.env_id,
                                "depends_on": []}
        if env.version:
            step["version"] = env.version
        tails[env.env_id] = b.add(step, origin)
        if env.artifact_id:
            seed: JsonObject = {"id": _scoped("seed", env.env_id, many), "type": "load_artifact",
                                    "env_id": env.env_id, "artifact_id": env.artifact_id,
                                    "depends_on": [tails[env.env_id]]}
            if env.artifact_version:
                seed["version"] = env.artifact_version
            tails[env.env_id] = b.add(seed, f"{origin}.artifact_id")
        if linked.dataset is not None and linked.dataset_env == env.env_id:
            tails[env.env_id] = _dataset_step(b, linked, many, tails[env.env_id], reset=not env.artifact_id,
                                              origin=f"{origin}.dataset" if env.dataset else "$.dataset")
    if task.scenario is not None:
        _scenario(b, task, many, tails, path)
    return tails


def _dataset_step(b: _Builder, linked: Bound, many: bool, after: str, *, reset: bool, origin: str) -> str:
    """Load the dataset into its env: only the bound entities' rows when the task binds any."""
    assert linked.dataset is not None and linked.dataset_env is not None
    step: JsonObject = {"id": _scoped("dataset", linked.dataset_env, many), "type": "load_artifact",
                            "env_id": linked.dataset_env, "artifact_id": linked.dataset.artifact_id,
                            "depends_on": [after]}
    if linked.dataset.version:
        step["version"] = linked.dataset.version
    if linked.entity_ids is not None:
        step["entity_ids"] = [*linked.entity_ids]
    if not reset:
        step["reset"] = False
    return b.add(step, origin)


def _scenario(b: _Builder, task: VerialTask, many: bool, tails: dict[str, str], path: str) -> None:
    """Set each env's clock to start_at, then register each action and move the clock to it."""
    assert task.scenario is not None
    start = task.scenario.start_at
    entities = {e.id: e for e in task.entities}
    offsets: dict[str, float] = {}
    for n, action in enumerate(task.scenario.steps, 1):
        origin = f"{path}.scenario.steps[{n - 1}]"
        env_id = action.env_id or task.all_envs()[0].env_id
        if env_id not in offsets:
            tails[env_id] = b.add({"id": _scoped("clock", env_id, many), "type": "sync_env_clock", "env_id": env_id,
                                   "time": start.isoformat(), "depends_on": [tails[env_id]]},
                                  f"{path}.scenario.start_at")
            offsets[env_id] = 0.0
        data = action.trigger_data(entities[action.entity_id].fields() if action.entity_id else {})
        trigger: JsonObject = {"at": (start + timedelta(seconds=action.at_sec)).isoformat(),
                                   "action": action.action, "data": data}
        if action.id:
            trigger["id"] = action.id
        tails[env_id] = b.add({"id": f"scenario-{n}", "type": "register_env_triggers", "env_id": env_id,
                               "triggers": [trigger], "depends_on": [tails[env_id]]},
                              origin, [(".triggers[0].data", f"{origin}.data")])
        advance = action.at_sec - offsets[env_id]
        if advance > 0:
            # The clock never goes back: an action listed after a later one fires as it is registered.
            offsets[env_id] = action.at_sec
            tails[env_id] = b.add({"id": f"scenario-{n}-clock", "type": "sync_env_clock", "env_id": env_id,
                                   "advance_seconds": advance, "depends_on": [tails[env_id]]}, f"{origin}.at_sec")


# -- the agent and its prompt -----------------------------------------------------------------------


def agent_id_of(task: VerialTask, defaults: BenchmarkDefaults) -> str:
    """The task's agent, else an env's shorthand, else the benchmark's, else the reference llm agent."""
    from_envs = [e.a2a_agent_id for e in task.all_envs() if e.a2a_agent_id]
    return task.agent.a2a_agent_id or (from_envs[0] if from_envs else None) or defaults.a2a_agent_id \
        or DEFAULT_AGENT_ID


def _agent_and_prompt(b: _Builder, task: VerialTask, defaults: BenchmarkDefaults, path: str,
                      env_steps: list[str], setup_tails: list[str]) -> list[str]:
    """Deploy the agent and prompt it with the task_item; returns what the verifiers wait for (the
    prompt, or without a task_item the agent and the whole setup)."""
    agent = task.agent
    step: JsonObject = {"id": "agent", "type": "deploy_agent", "a2a_agent_id": agent_id_of(task, defaults),
                            "agent_name": AGENT_NAME, "env_ids": [e.env_id for e in task.all_envs()],
                            "depends_on": [*env_steps]}
    if agent.model or defaults.model:
        step["model"] = agent.model or defaults.model
    if agent.system_prompt:
        step["system_prompt"] = agent.system_prompt
    named = agent.a2a_agent_id or any(e.a2a_agent_id for e in task.all_envs())
    config = {**({} if named else defaults.agent_config), **agent.agent_config}
    if config:
        step["agent_config"] = config
    b.add(step, f"{path}.agent", [(".agent_config", f"{path}.agent.agent_config")])
    text = prompt_text(task.task_item)
    if not text:
        return list(dict.fromkeys(["agent", *setup_tails]))
    prompt: JsonObject = {"id": "prompt", "type": "prompt_agent", "agent_name": AGENT_NAME, "prompt_id": PROMPT_ID,
                              "prompt": text,
                              "timeout_seconds": task.timeout or defaults.timeout_seconds,
                              "depends_on": list(dict.fromkeys(["agent", *setup_tails]))}
    if agent.max_turns:
        prompt["max_turns"] = agent.max_turns
    b.add(prompt, f"{path}.task_item", [(".prompt", f"{path}.task_item.instruction")])
    return [PROMPT_ID]


# -- criteria -> verifiers --------------------------------------------------------------------------


def criterion_ids(criteria: list[TaskCriterion]) -> list[str]:
    """Each criterion's row id: its id, else its label in snake_case (``_2``, ``_3``… on a clash)."""
    taken = {c.id for c in criteria if c.id}
    ids: list[str] = []
    for i, c in enumerate(criteria):
        if c.id:
            ids.append(c.id)
            continue
        base = slugify(c.label) or f"criterion_{i + 1}"
        candidate, n = base, 1
        while candidate in taken:
            n += 1
            candidate = f"{base}_{n}"
        taken.add(candidate)
        ids.append(candidate)
    return ids


def _positive(weights: list[float]) -> float:
    return sum(w for w in weights if w > 0)


def _verifiers(b: _Builder, task: VerialTask, defaults: BenchmarkDefaults, many: bool,
               path: str, after: list[str]) -> list[CriterionRef]:
    ids = criterion_ids(task.criteria)
    refs: list[CriterionRef] = []
    refs += _state_verifiers(b, task, ids, many, path, after)
    refs += _rubric_verifier(b, task, ids, defaults, path)
    refs += _response_verifiers(b, task, ids, path)
    order = {cid: i for i, cid in enumerate(ids)}
    return sorted(refs, key=lambda r: order[r.id])


def _ref(c: TaskCriterion, cid: str, verifier_id: str, row: bool = True) -> CriterionRef:
    return CriterionRef(id=cid, label=c.label, weight=c.weight, axis=c.axis, verifier_id=verifier_id,
                        row_id=cid if row else None)


def _state_verifiers(b: _Builder, task: VerialTask, ids: list[str], many: bool, path: str,
                     after: list[str]) -> list[CriterionRef]:
    refs: list[CriterionRef] = []
    for env in task.all_envs():
        rows = [(j, c) for j, c in enumerate(task.criteria)
                if isinstance(c.assertion, StateCheck) and (c.assertion.env_id or env.env_id) == env.env_id]
        if not rows:
            continue
        verifier_id = _scoped("state", env.env_id, many)
        assertions: list[JsonValue] = [_state_row(c, ids[j], find_entity(task, c.input_entity_id)) for j, c in rows]
        b.add({"id": verifier_id, "type": "env_state_verifier", "env_id": env.env_id, "verifier_id": verifier_id,
               "assertions": assertions, "score_aggregator": "weighted_average",
               "weight": _positive([c.weight for _, c in rows]), "depends_on": [*after]},
              f"{path}.criteria",
              [(f".assertions[{r}]", f"{path}.criteria[{j}].assertion") for r, (j, _) in enumerate(rows)])
        refs += [_ref(c, ids[j], verifier_id) for j, c in rows]
    return refs


def _state_row(c: TaskCriterion, cid: str, entity: Entity | None) -> JsonObject:
    """The assertion as env_state_verifier takes it: the criterion's id, weight, label and axis."""
    check = c.assertion
    row = check.model_dump(mode="json", by_alias=True, exclude_unset=True)
    row.pop("env_id", None)
    row.update({"id": cid, "weight": c.weight, "label": c.label})
    if c.axis:
        row["axis"] = c.axis
    if isinstance(check, StateMatchCheck) and entity is not None and check.correlate_by.value is None:
        row["correlate_by"]["value"] = entity_field(entity, check.correlate_by.key)
    if isinstance(check, VoiceTranscriptCheck | FaxContentCheck) and entity is not None:
        row["where"] = {"patient_id": entity_field(entity, "patient_id"), **check.where}
    return row


def _rubric_verifier(b: _Builder, task: VerialTask, ids: list[str], defaults: BenchmarkDefaults,
                     path: str) -> list[CriterionRef]:
    rubrics = [(j, c, c.assertion) for j, c in enumerate(task.criteria) if isinstance(c.assertion, RubricCheck)]
    rows = [(j, c) for j, c, _ in rubrics]
    if not rows:
        return []
    step: JsonObject = {
        "id": "rubric", "type": "rubrics_verifier", "verifier_id": "rubric", "prompt_id": PROMPT_ID,
        "criteria": [{"id": ids[j], "criterion": rubric.criterion, "weight": c.weight,
                      **({"axis": c.axis} if c.axis else {})} for j, c, rubric in rubrics],
        "score_aggregator": "weighted_average", "weight": _positive([c.weight for _, c in rows]),
        "depends_on": [PROMPT_ID]}
    if defaults.judge_model:
        step["judge_model"] = defaults.judge_model
    b.add(step, f"{path}.criteria", [(f".criteria[{r}]", f"{path}.criteria[{j}].assertion")
                                     for r, (j, _) in enumerate(rows)])
    return [_ref(c, ids[j], "rubric") for j, c in rows]


def _response_verifiers(b: _Builder, task: VerialTask, ids: list[str], path: str) -> list[CriterionRef]:
    """One verifier per response check, so each keeps its own weight in the task score."""
    rows = [(j, c) for j, c in enumerate(task.criteria) if isinstance(c.assertion, ResponseContainsCheck)]
    refs: list[CriterionRef] = []
    for n, (j, c) in enumerate(rows, 1):
        check = c.assertion
        assert isinstance(check, ResponseContainsCheck)
        verifier_id = "response" if len(rows) == 1 else f"response-{n}"
        b.add({"id": verifier_id, "type": "agent_prompt_response_verifier", "verifier_id": verifier_id,
               "prompt_id": PROMPT_ID, "response_contains": [*check.needles], "case_sensitive": check.case_sensitive,
               "weight": c.weight, "depends_on": [PROMPT_ID]},
              f"{path}.criteria[{j}]", [(".response_contains", f"{path}.criteria[{j}].assertion.needles")])
        refs.append(_ref(c, ids[j], verifier_id, row=False))
    return refs
