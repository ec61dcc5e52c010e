"""Fixtures for the document tests."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from prefect_agentenv.context import RunContext
from prefect_agentenv.steps import registry


async def _unused_run(step: object, ctx: RunContext) -> RunContext:
    raise AssertionError("document tests never run a step")


@pytest.fixture
def every_step_implemented(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Give every registered step type a run function for the length of one test.

    A document is only returned by validation when it has no problem at all, and a step type
    without a run function is a problem; this lets the tests look at the validated document
    whatever step types are implemented so far.
    """
    for step_type, definition in registry.all_steps().items():
        if not definition.implemented:
            monkeypatch.setitem(registry._registry, step_type, dataclasses.replace(definition, run=_unused_run))
    yield
