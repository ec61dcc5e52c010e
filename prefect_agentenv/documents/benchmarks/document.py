"""The benchmark document model: tasks (step documents or Verial-style tasks), seeds, epochs.

A benchmark names the tasks it runs. A task is either a **step document** (a file next to the
benchmark, or steps written inline) or a **Verial-style task** (an instruction, a pre-rollout
scenario, entities and typed criteria) that :mod:`prefect_agentenv.documents.compile` turns
into a step document. docs/benchmarks.md describes the format.

Inline steps are kept as raw objects here: they may hold ``<name>`` placeholders that only a
seed row makes valid, so they are validated as a task document once a row is filled in.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from prefect_agentenv.attribute_docs import attribute_docstrings
from prefect_agentenv.documents.benchmarks.infrastructure import InfrastructurePolicy
from prefect_agentenv.documents.benchmarks.matrix import check_matrix
from prefect_agentenv.documents.loading import NAME_PATTERN
from prefect_agentenv.documents.scoring import ScoringConfig, fold_skip_policy
from prefect_agentenv.documents.verial.criteria import TaskCriterion
from prefect_agentenv.jsontypes import JsonObject

SLUG_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"
"""Benchmark slugs name deployments and artifact keys: lowercase words joined by dashes."""
TASK_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
"""Task ids become flow-run names and store keys; ``[`` is kept for the ``[seed=N]`` suffix."""
DEFAULT_SCENARIO_START = datetime.fromisoformat("2026-01-05T09:00:00+00:00")
"""Where a scenario's env clock starts when the scenario does not say (a fixed instant, so every
run of the task sees the same times)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=attribute_docstrings)


_M = TypeVar("_M", bound=BaseModel)


def _fold_scoring_policy(model: _M) -> _M:
    """``scoring.skip_policy`` is the same as the model's ``skip_policy`` (both written: they agree)."""
    scoring: ScoringConfig | None = getattr(model, "scoring", None)
    if scoring is not None:
        policy = fold_skip_policy(getattr(model, "skip_policy", None), scoring)
        if policy is not None:
            model.__dict__["skip_policy"] = policy
    return model


# -- benchmark-wide settings ----------------------------------------------------------------------


class RunBudget(_Strict):
    """A benchmark run's budget for model calls, as its model gateways count them."""

    usd: float | None = Field(default=None, gt=0)
    """US dollars over every model call of the run (agents, judges, simulated users), from the price table."""
    tokens: int | None = Field(default=None, gt=0)
    """Input plus output tokens over every model call of the run."""


class BenchmarkDefaults(_Strict):
    """Values every task gets unless it says otherwise."""

    a2a_agent_id: str | None = None
    """Agent deployed by Verial-style tasks that name none (the reference ``llm`` agent when unset)."""
    model: str | None = None
    """Model of the agent deployed by Verial-style tasks."""
    agent_config: JsonObject = Field(default_factory=dict)
    """Agent-config fields of that agent (not of an agent a task names); a task's agent.agent_config
    is merged over them."""
    judge_model: str | None = None
    """Model of the judge of the rubric criteria of Verial-style tasks."""
    overrides: dict[str, str] = Field(default_factory=dict)
    """Run overrides for every task (as ``prefect-agentenv run --override KEY=VALUE``)."""
    timeout_seconds: float = Field(default=1800, gt=0)
    """Time limit of one task run, unless the task sets its own."""
    skip_policy: Literal["zero", "exclude"] | None = None
    """How skipped verifiers count in every task's score (``zero`` or ``exclude``), unless the task
    or its document says; ``zero`` when nobody does."""
    scoring: ScoringConfig | None = None
    """Where and how every task is scored (``mode: isolated``, ``retries``, ``env``, ``network``…);
    a task document's ``scoring``, then a task's, override the fields they write."""

    _scoring_policy = model_validator(mode="after")(_fold_scoring_policy)


class TagFilter(_Strict):
    """Which tasks run, by tag."""

    include_tags: list[str] = Field(default_factory=list)
    """Only tasks with at least one of these tags run (every task when empty)."""
    exclude_tags: list[str] = Field(default_factory=list)
    """Tasks with any of these tags never run."""


class CsvSeeds(_Strict):
    """Seed rows read from a CSV file with a header line."""

    csv: str = Field(min_length=1)
    """Path of the CSV file, relative to the benchmark file."""


def _scalar(value: Any) -> Any:
    if not isinstance(value, str | int | float | bool):
        raise ValueError(f"a seed value must be text, a number or a boolean, not {type(value).__name__}")
    return value


SeedValue = Annotated[Any, AfterValidator(_scalar), WithJsonSchema({"type": ["string", "number", "boolean"]})]
"""A placeholder's value: any scalar (it is written into strings)."""
SeedRows = list[dict[str, SeedValue]]


def _seeds_kind(value: Any) -> str | None:
    if value is None:
        return "none"
    if isinstance(value, dict | CsvSeeds):
        return "CsvSeeds"
    if isinstance(value, list):
        return "rows"
    return None


Seeds = Annotated[
    Annotated[SeedRows, Tag("rows")] | Annotated[CsvSeeds, Tag("CsvSeeds")] | Annotated[None, Tag("none")],
    Discriminator(_seeds_kind, custom_error_type="seeds_form",
                  custom_error_message="seeds must be a list of rows (objects) or {csv: path}"),
]


# -- step-document tasks --------------------------------------------------------------------------


class StepDocumentTask(_Strict):
    """A task written as a step document: a file (``path``) or inline ``steps``."""

    id: str = Field(pattern=TASK_ID_PATTERN)
    """Task id within the benchmark (also the id of the task document that runs)."""
    path: str | None = Field(default=None, min_length=1)
    """Task document file (JSON or YAML), relative to the benchmark file."""
    steps: list[Any] | None = None
    """The steps, written inline as in a task document."""
    description: str | None = None
    tags: list[str] = Field(default_factory=list)
    """Labels for filtering and reporting, added to the document's own tags."""
    timeout_seconds: float | None = Field(default=None, gt=0)
    """Time limit of one run of this task; the benchmark default when omitted."""
    weight: float = Field(default=1.0, ge=0)
    """Weight of this task in the benchmark's mean score."""
    skip_policy: Literal["zero", "exclude"] | None = None
    """How skipped verifiers count in this task's score; the document's, else the benchmark's."""
    scoring: ScoringConfig | None = None
    """Where and how this task is scored; written fields override the document's and the benchmark's."""

    _scoring_policy = model_validator(mode="after")(_fold_scoring_policy)

    @model_validator(mode="after")
    def _one_source(self) -> StepDocumentTask:
        if (self.path is None) == (self.steps is None):
            raise ValueError("give exactly one of path (a task document file) or steps (inline steps)")
        return self


# -- Verial-style tasks ---------------------------------------------------------------------------


class TaskItem(BaseModel):
    """What the agent receives at the start of the run; loose on purpose: other members are kept
    and shown to the agent as context lines."""

    model_config = ConfigDict(extra="allow", json_schema_extra=attribute_docstrings)

    instruction: str | None = None
    """The direction for the agent, in natural language; the first line of its prompt."""
    trigger: str | None = None
    """What starts the work (for example "an inbound referral fax"); added to the prompt."""
    expected_inputs: list[str] | str | None = None
    """Hints about the data the agent needs to pull; added to the prompt."""


class ScenarioStep(BaseModel):
    """One pre-rollout action: a trigger action of an env, fired before the agent is prompted.

    Members this model does not name (an action's own parameters) go into the trigger's data."""

    model_config = ConfigDict(extra="allow", json_schema_extra=attribute_docstrings)

    action: str = Field(min_length=1)
    """A trigger action of the env, e.g. ``drop_file_inbox`` or ``drop_inbox_document`` (records),
    ``deliver_email`` (email)."""
    at_sec: float = Field(default=0, ge=0)
    """When the action happens, in seconds after the scenario's start_at."""
    env_id: str | None = None
    """The env that performs it; required when the task has several envs."""
    data: JsonObject = Field(default_factory=dict)
    """The trigger's data (for drop_inbox_document, the inbox document)."""
    entity_id: str | None = None
    """An entity whose fields are merged under data (data wins on a clash)."""
    inbound_path: str | None = None
    """For file drops: the inbox folder the file lands in (e.g. ``inbox/``); goes into data."""
    id: str | None = None
    """Id of the registered trigger; the env picks one when omitted."""

    def trigger_data(self, entity_fields: JsonObject) -> JsonObject:
        """The trigger's data: the entity's fields, then the action's own parameters, then data."""
        own = dict(self.model_extra or {})
        if self.inbound_path is not None:
            own["inbound_path"] = self.inbound_path
        return {**entity_fields, **own, **self.data}


class Scenario(_Strict):
    """Actions run before the rollout: seed inbound events the agent is meant to react to."""

    start_at: datetime = DEFAULT_SCENARIO_START
    """The env clock is set to this instant before the first action (ISO 8601)."""
    steps: list[ScenarioStep] = Field(min_length=1)


class Entity(BaseModel):
    """A record the task is bound to; its fields are ``<entity_id.field>`` placeholders.

    Written inline (``{id, ...fields}``), or by id alone (``ent_referral_1`` or ``{id}``) to bind
    the row of the linked dataset that carries that ``entity_id``."""

    model_config = ConfigDict(extra="allow", json_schema_extra=attribute_docstrings)

    id: str = Field(pattern=NAME_PATTERN)
    """Entity id, referenced as ``<id.field>``, by a criterion's input_entity_id and a scenario's entity_id."""

    @model_validator(mode="before")
    @classmethod
    def _liberal(cls, value: Any) -> Any:
        # A bare id binds a dataset row; Verial's DatasetEntity names its id entity_id.
        if isinstance(value, str):
            return {"id": value}
        if isinstance(value, dict) and "id" not in value and "entity_id" in value:
            return {"id": value["entity_id"], **{k: v for k, v in value.items() if k != "entity_id"}}
        return value

    def fields(self) -> JsonObject:
        """The entity's fields, without its id."""
        return dict(self.model_extra or {})


class DatasetRef(_Strict):
    """A dataset artifact: records (``{resource: [rows]}`` JSON) that entities bind to by id."""

    artifact_id: str = Field(min_length=1)
    """Id of the stored environment artifact holding the records."""
    version: str | None = None
    """Version of the artifact; latest when omitted."""

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, value: Any) -> Any:
        return {"artifact_id": value} if isinstance(value, str) else value


class TaskEnv(_Strict):
    """An env the task deploys, with the artifact it is seeded from."""

    env_id: str = Field(min_length=1)
    """Registry id of the env (an AgentEnvironment block or a reference env)."""
    version: str | None = None
    """Env version; latest when omitted."""
    artifact_id: str | None = None
    """Environment artifact loaded into the env before the scenario (data/reset, then data/add)."""
    artifact_version: str | None = None
    """Version of the artifact; latest when omitted."""
    a2a_agent_id: str | None = None
    """Agent to deploy with this env (shorthand for agent.a2a_agent_id)."""
    dataset: DatasetRef | None = None
    """Dataset the task's entities bind to; only the bound records (and those sharing their ids)
    are loaded into the env, so the agent works on exactly those."""


class TaskAgent(_Strict):
    """The agent under test."""

    a2a_agent_id: str | None = None
    """Registry id of the agent; the benchmark default when omitted."""
    model: str | None = None
    """Model the agent uses; the benchmark default when omitted."""
    system_prompt: str | None = None
    agent_config: JsonObject = Field(default_factory=dict)
    """Extra agent-config fields (for the scripted agent, its plan)."""
    max_turns: int | None = Field(default=None, ge=1)
    """Cap on the agent's model turns."""


class VerialTask(_Strict):
    """A task written as an instruction, a scenario, entities and typed criteria; compiled to steps."""

    id: str | None = Field(default=None, pattern=TASK_ID_PATTERN)
    """Task id within the benchmark; the name in lowercase-dashes when omitted."""
    benchmark_id: str | None = None
    """Accepted as Verial's tasks API writes it; the task belongs to the benchmark it is in."""
    name: str = Field(min_length=1)
    """Short human-readable title."""
    task_item: TaskItem | None = None
    """What the agent receives; null runs the scenario and the criteria without prompting the agent."""
    scenario: Scenario | None = None
    entities: list[Entity] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    """Labels for filtering and reporting."""
    timeout: float | None = Field(default=None, gt=0)
    """Time limit of one run of this task, in seconds; the benchmark default when omitted."""
    weight: float = Field(default=1.0, ge=0)
    """Weight of this task in the benchmark's mean score."""
    env: TaskEnv | None = None
    """The env the task runs against; the benchmark's when omitted."""
    envs: list[TaskEnv] | None = Field(default=None, min_length=1)
    """Several envs (give env or envs, or neither to use the benchmark's)."""
    agent: TaskAgent = Field(default_factory=TaskAgent)
    criteria: list[TaskCriterion] = Field(min_length=1)
    skip_policy: Literal["zero", "exclude"] | None = None
    """How skipped verifiers count in this task's score; the benchmark's when omitted."""
    scoring: ScoringConfig | None = None
    """Where and how this task is scored; written fields override the benchmark's ``defaults.scoring``."""

    _scoring_policy = model_validator(mode="after")(_fold_scoring_policy)

    @model_validator(mode="after")
    def _one_env_form(self) -> VerialTask:
        if self.env is not None and self.envs is not None:
            raise ValueError("give one of env (one env) or envs (a list of envs), not both")
        return self

    def task_id(self) -> str:
        """The id, or the name in lowercase-dashes."""
        return self.id or slugify(self.name, "-") or "task"

    def all_envs(self) -> list[TaskEnv]:
        return [self.env] if self.env is not None else list(self.envs or [])


def task_kind(value: Any) -> str | None:
    """Which task model a raw task is: a Verial-style task says task_item (or criteria), else steps."""
    if isinstance(value, BaseModel):
        return type(value).__name__
    if not isinstance(value, dict):
        return None
    if "path" in value or "steps" in value:
        return "StepDocumentTask"
    if {"task_item", "criteria", "name"} & value.keys():
        return "VerialTask"
    return None


BenchmarkTask = Annotated[
    Annotated[StepDocumentTask, Tag("StepDocumentTask")] | Annotated[VerialTask, Tag("VerialTask")],
    Discriminator(task_kind, custom_error_type="task_kind",
                  custom_error_message="a task needs path or steps (a step document) "
                                       "or task_item (a Verial-style task)"),
]


class BenchmarkHeader(_Strict):
    """Everything a benchmark says besides its tasks (validated on its own, so a bad task does not
    hide a problem in the header)."""

    name: str = Field(min_length=1)
    """Human-readable name."""
    slug: str = Field(pattern=SLUG_PATTERN)
    """Stable lowercase-dashes name used for deployments and artifact keys."""
    version: str = Field(default="1", json_schema_extra={"type": ["string", "number"]})
    """Version of the benchmark, recorded with its results."""
    description: str | None = None
    defaults: BenchmarkDefaults = Field(default_factory=BenchmarkDefaults)
    seeds: Seeds = None
    """Rows of values for ``<name>`` placeholders: a list of objects, or {csv: path}. A task that uses
    a seed column runs once per row."""
    epochs: int = Field(default=1, ge=1)
    """How many times each task runs with each seed row (for pass@k)."""
    concurrency: int = Field(default=2, ge=1)
    """How many task runs at the same time."""
    pool: bool = False
    """Keep env and agent processes alive across task runs (a warm pool): envs are reset through
    data/reset, agents get an emptied sandbox and a new A2A context per task run. Runs here only
    (not when task runs are dispatched to a deployment)."""
    step_task_runs: bool = True
    """Record each step of a task run as a Prefect task run (the step graph in the UI, step-type
    concurrency limits). ``false`` keeps the steps in the report and in the task run's steps
    artifact only, and Prefect records about half as much per task run: for large benchmarks."""
    task_runs_as: Literal["subflows", "tasks"] = "subflows"
    """How each task run is recorded in Prefect: ``subflows`` (a flow run of its own, with its steps
    as task runs as ``step_task_runs`` says) or ``tasks`` (a task run of the benchmark's flow run,
    with its logs and artifacts, the steps inside it; Prefect records far less per task run).
    Runs here only (a fleet's task runs are flow runs of the deployment)."""
    tasks_per_flow_run: int = Field(default=1, ge=1)
    """With ``dispatch: deployment``, how many task runs go to the work pool as one flow run (a shard of
    the ``agent-task-shard`` deployment, each task run a subflow of it): a worker then starts one process
    for them all instead of one each. Results still arrive one by one."""
    tags: TagFilter = Field(default_factory=TagFilter)
    """Tag filter selecting the tasks that run."""
    matrix: dict[str, list[str]] = Field(default_factory=dict)
    """A sweep: run overrides, each with the values to try (``a2a_agent_id: [scripted, llm]``). Every
    combination is a cell that runs every task, seed and epoch, all in one benchmark run."""
    infrastructure: InfrastructurePolicy = Field(default_factory=InfrastructurePolicy)
    """Task runs that failed for infrastructure (not the agent's failure): retries, back-off, whether
    they count in the mean, and the share of them that fails the benchmark."""
    budget: RunBudget | None = None
    """What the whole benchmark run may spend on model calls (``usd``, ``tokens``); once spent, no task
    run starts, the ones in flight have their next model call refused, and the rest are recorded as
    not run. ``bench --budget-usd`` / ``--budget-tokens`` win."""
    env: TaskEnv | None = None
    """The env of every Verial-style task that names none (Verial's playground)."""
    envs: list[TaskEnv] | None = Field(default=None, min_length=1)
    """Several envs for every Verial-style task that names none."""
    dataset: DatasetRef | None = None
    """Dataset the entities of Verial-style tasks bind to, unless their env links its own."""

    @field_validator("version", mode="before")
    @classmethod
    def _version_as_text(cls, value: Any) -> Any:
        # YAML reads `version: 2` as a number; a version is a label.
        return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value

    @field_validator("matrix", mode="before")
    @classmethod
    def _checked_matrix(cls, value: Any) -> Any:
        # Checked whole (a key that is no override, an empty list, a value twice); numbers become text.
        try:
            return check_matrix(value) if isinstance(value, dict) else value
        except ValueError as exc:  # the error's place already says "matrix"
            raise ValueError(str(exc).removeprefix("matrix: ")) from None

    @model_validator(mode="after")
    def _one_env_form(self) -> BenchmarkHeader:
        if self.env is not None and self.envs is not None:
            raise ValueError("give one of env (one env) or envs (a list of envs), not both")
        return self

    @model_validator(mode="after")
    def _steps_inside_tasks(self) -> BenchmarkHeader:
        if self.task_runs_as == "tasks" and self.step_task_runs and "step_task_runs" in self.model_fields_set:
            raise ValueError("step_task_runs: true needs task_runs_as: subflows (a task run's steps run "
                             "inside it, without task runs of their own)")
        return self


class Benchmark(BenchmarkHeader):
    """A benchmark: tasks, the seed rows they are crossed with, how often and how wide they run."""

    tasks: list[BenchmarkTask] = Field(min_length=1)
    """Step documents (path or inline steps) and Verial-style tasks."""


def slugify(text: str, sep: str = "_") -> str:
    """Lowercase words of ``text`` joined by ``sep`` (ids derived from names and labels)."""
    return sep.join(re.findall(r"[a-z0-9]+", text.lower()))


def is_benchmark_data(data: Any) -> bool:
    """A benchmark document is a mapping with a ``tasks`` list (a task document has ``steps``)."""
    return isinstance(data, dict) and "tasks" in data and "steps" not in data
