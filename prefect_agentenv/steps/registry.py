"""The step registry: document ``type`` → fields model and run function.

Built-in steps and plugins register the same way, through the ``prefect_agentenv.steps``
entry-point group (entry name == step type, value a ``StepDefinition``). Tests and notebooks
can also call :func:`register` directly.
"""

from __future__ import annotations

import difflib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from prefect_agentenv.context import RunContext
from prefect_agentenv.exceptions import ConfigurationError
from prefect_agentenv.steps.base import StepModel

ENTRY_POINT_GROUP = "prefect_agentenv.steps"

RunFunction = Callable[[Any, RunContext], Awaitable[RunContext]]


@dataclass(frozen=True)
class StepDefinition:
    """A step type: its fields model and its run function."""

    model: type[StepModel]
    run: RunFunction

    @property
    def type(self) -> str:
        return self.model.model_fields["type"].default


_registry: dict[str, StepDefinition] = {}
_loaded = False


def register(definition: StepDefinition, *, replace: bool = False) -> StepDefinition:
    """Register a step type (plugins normally use the entry point instead)."""
    key = definition.type
    if not replace and key in _registry and _registry[key] is not definition:
        raise ConfigurationError(f"step type '{key}' is already registered")
    _registry[key] = definition
    return definition


def _load_entry_points() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in _registry:
            continue
        definition = ep.load()
        if not isinstance(definition, StepDefinition) or definition.type != ep.name:
            raise ConfigurationError(
                f"entry point '{ep.name}' ({ep.value}) must be a StepDefinition whose model has type '{ep.name}'"
            )
        _registry[ep.name] = definition


def all_steps() -> dict[str, StepDefinition]:
    """Every registered step type, by type name."""
    _load_entry_points()
    return dict(sorted(_registry.items()))


def get_step(step_type: str) -> StepDefinition:
    """The definition of a step type.

    Raises:
        ConfigurationError: the type is unknown; the message lists close matches.
    """
    steps = all_steps()
    if step_type in steps:
        return steps[step_type]
    raise ConfigurationError(unknown_type_message(step_type, list(steps)))


def unknown_type_message(step_type: str, known: list[str]) -> str:
    close = difflib.get_close_matches(step_type, known, n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    return (
        f"unknown step type '{step_type}'; {hint}known types: {', '.join(sorted(known))}. "
        f"A custom type must be installed as an entry point in the '{ENTRY_POINT_GROUP}' group"
    )
