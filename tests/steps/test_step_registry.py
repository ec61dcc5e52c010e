"""The places a built-in step type is written down agree with its module: the entry point in
pyproject.toml, the registry, and its Prefect task in ``prefect_agentenv.tasks``. A new step type
that misses one of them fails here, naming what is missing."""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path

import pytest
from prefect import Task

import prefect_agentenv.tasks as tasks
from prefect_agentenv.steps.registry import ENTRY_POINT_GROUP, StepDefinition, all_steps

ROOT = Path(__file__).resolve().parents[2]
STEPS = ROOT / "prefect_agentenv" / "steps"
NOT_STEP_TYPES = {"__init__", "base", "registry", "services"}  # services: the old path of steps.support.services
MODULES = sorted(p.stem for p in STEPS.glob("*.py") if p.stem not in NOT_STEP_TYPES)
ENTRY_POINTS: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"][
    ENTRY_POINT_GROUP]
TASK_HELPERS = {"agentenv_run", "step_task"}


def definition_of(module: str) -> StepDefinition:
    found = getattr(importlib.import_module(f"prefect_agentenv.steps.{module}"), "definition", None)
    assert isinstance(found, StepDefinition), f"steps/{module}.py defines no StepDefinition named 'definition'"
    return found


@pytest.mark.parametrize("module", MODULES)
def test_each_step_module_defines_the_step_type_it_is_named_after(module: str) -> None:
    assert definition_of(module).type == module


def test_pyproject_declares_an_entry_point_for_each_step_module_and_no_other() -> None:
    expected = {module: f"prefect_agentenv.steps.{module}:definition" for module in MODULES}
    assert ENTRY_POINTS == expected, (
        f"missing: {sorted(set(expected) - set(ENTRY_POINTS))}, unknown: {sorted(set(ENTRY_POINTS) - set(expected))}, "
        f"wrong: {sorted(k for k in set(expected) & set(ENTRY_POINTS) if expected[k] != ENTRY_POINTS[k])}")


def test_the_registry_holds_each_built_in_step_type_as_its_module_defines_it() -> None:
    registered = all_steps()
    assert {module: registered.get(module) for module in MODULES} == {m: definition_of(m) for m in MODULES}


def test_tasks_has_a_prefect_task_for_each_built_in_step_type_and_lists_it() -> None:
    listed = set(tasks.__all__) - TASK_HELPERS
    assert listed == set(MODULES), f"missing: {sorted(set(MODULES) - listed)}, unknown: {sorted(listed - set(MODULES))}"
    for module in MODULES:
        task = getattr(tasks, module, None)
        assert isinstance(task, Task) and task.name == module, f"tasks.{module} is not the step's task"
    assert TASK_HELPERS <= set(tasks.__all__)
