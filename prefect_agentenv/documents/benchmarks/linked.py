"""What a benchmark lends its Verial-style tasks: default envs and a dataset their entities bind to.

In Verial a task runs in its benchmark's playground, against records of a linked dataset. Here a
benchmark's ``env``/``envs`` is the env of every task that names none, and a dataset artifact
(linked by the benchmark, or by an env as ``dataset``) holds rows carrying an ``entity_id``. A task
binds a row by naming its entity id — in ``entities``, a scenario action's ``entity_id``, a
criterion's ``input_entity_id`` or an ``<entity.field>`` placeholder — and the row's fields
become the entity's (fields written inline win). The env is then loaded with the bound rows
only (see :mod:`prefect_agentenv.artifacts.datasets`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from prefect_agentenv.artifacts.datasets import ENTITY_KEY, Dataset, DatasetError
from prefect_agentenv.documents.benchmarks.document import DatasetRef, Entity, TaskEnv, VerialTask
from prefect_agentenv.documents.problems import Problem
from prefect_agentenv.documents.verial.entities import referenced_entity_ids
from prefect_agentenv.exceptions import AgentEnvError

DatasetReader = Callable[[DatasetRef], Dataset]
"""Reads a dataset artifact (from the configured artifact store, when compiling a benchmark)."""


@dataclass
class Linked:
    """The benchmark's envs and dataset, and how to read a dataset."""

    envs: list[TaskEnv] = field(default_factory=list)
    dataset: DatasetRef | None = None
    read: DatasetReader | None = None
    path: str = "$"
    """Where the benchmark's env/dataset are written (for problems)."""


@dataclass
class Bound:
    """A task with its envs and dataset entities filled in, and what to load for them."""

    task: VerialTask
    dataset_env: str | None = None
    """The env the dataset is loaded into (the first env), None without a dataset."""
    dataset: DatasetRef | None = None
    entity_ids: list[str] | None = None
    """The dataset entities the task binds (None: no entity binds a row, the whole dataset loads)."""


def link(task: VerialTask, linked: Linked, path: str) -> tuple[Bound | None, list[Problem]]:
    """Give the task the benchmark's envs when it has none, then bind its entities to dataset rows."""
    if task.env is None and task.envs is None:
        if not linked.envs:
            return None, [Problem("the task names no env and the benchmark has none", path=f"{path}.env",
                                  hint="give env: {env_id: ...} on the task, or env/envs on the benchmark")]
        update = {"env": linked.envs[0]} if len(linked.envs) == 1 else {"envs": list(linked.envs)}
        task = task.model_copy(update=update)
    ref, where, env_id = _dataset_of(task, linked, path)
    if ref is None:
        return Bound(task), []
    if linked.read is None:
        return Bound(task, env_id, ref), []
    try:
        dataset = linked.read(ref)
    except (DatasetError, AgentEnvError) as exc:
        return None, [Problem(f"dataset '{ref.artifact_id}' cannot be read: {exc}", path=where,
                              hint=f"publish it: prefect-agentenv artifact put {ref.artifact_id} RECORDS.json "
                                   f"--environment {task.all_envs()[0].env_id}")]
    return _bind(task, dataset, ref, env_id)


def _dataset_of(task: VerialTask, linked: Linked, path: str) -> tuple[DatasetRef | None, str, str | None]:
    envs = task.all_envs()
    for i, env in enumerate(envs):
        if env.dataset is not None:
            where = f"{path}.env.dataset" if task.env is not None else f"{path}.envs[{i}].dataset"
            return env.dataset, where, env.env_id
    if linked.dataset is not None and envs:
        return linked.dataset, f"{linked.path}.dataset", envs[0].env_id
    return None, path, None


def _bind(task: VerialTask, dataset: Dataset, ref: DatasetRef, env_id: str | None) -> tuple[Bound, list[Problem]]:
    inline = {e.id: e for e in task.entities}
    wanted = list(dict.fromkeys([*inline, *referenced_entity_ids(task)]))
    entities: list[Entity] = []
    bound: list[str] = []
    for entity_id in wanted:
        found = dataset.find(entity_id)
        own = inline[entity_id].fields() if entity_id in inline else None
        if found is None:
            if own is not None:
                entities.append(inline[entity_id])
            continue
        row = {k: v for k, v in found[1].items() if k != ENTITY_KEY}
        entities.append(Entity.model_validate({**row, **(own or {}), "id": entity_id}))
        bound.append(entity_id)
    task = task.model_copy(update={"entities": entities})
    return Bound(task, env_id, ref, bound or None), []

