"""A run resolves its step graph once and hands it on: the Prefect graph and the scheduler share it."""

from __future__ import annotations

from typing import Any

import pytest

from prefect_agentenv.documents import graph as graph_module
from prefect_agentenv.documents import validate_data
from prefect_agentenv.documents.graph import StepGraph
from prefect_agentenv.documents.models import TaskDocument
from prefect_agentenv.engine.execute import run_body
from prefect_agentenv.engine.scheduler import DagScheduler
from prefect_agentenv.flows.agent_task import agent_task

pytestmark = pytest.mark.usefixtures("agentenv_home")

STEPS: list[dict[str, Any]] = [
    {"id": "a", "type": "test_noop", "depends_on": []},
    {"id": "b", "type": "test_noop"},
    {"id": "c", "type": "test_noop", "depends_on": ["a"]},
    {"id": "d", "type": "test_noop"},
]


def doc(task_id: str) -> TaskDocument:
    result = validate_data(STEPS, default_id=task_id)
    assert result.ok and result.document is not None, [p.render() for p in result.problems]
    return result.document


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    calls: list[list[str]] = []
    resolve = graph_module.resolve_dependencies

    def counted(ids: Any, declared: Any) -> dict[str, list[str]]:
        calls.append(list(ids))
        return resolve(ids, declared)

    monkeypatch.setattr(graph_module, "resolve_dependencies", counted)
    return calls


@pytest.mark.usefixtures("prefect_harness")
async def test_a_run_in_prefect_resolves_its_graph_once(monkeypatch: pytest.MonkeyPatch) -> None:
    document = doc("graph-once")
    calls = _counting(monkeypatch)
    state = await agent_task(document, return_state=True)
    assert state.is_completed()
    assert calls == [["a", "b", "c", "d"]]


def test_the_graph_resolves_omitted_dependencies_as_every_earlier_frontier_step() -> None:
    assert StepGraph.of(doc("shape").steps).deps == {"a": [], "b": ["a"], "c": ["a"], "d": ["b", "c"]}


def test_a_graph_of_other_steps_is_not_taken_for_these(monkeypatch: pytest.MonkeyPatch) -> None:
    steps = doc("other").steps
    wrong = StepGraph({"x": []})
    assert not wrong.covers(steps)
    scheduler = DagScheduler(steps, run_body, graph=wrong)
    assert scheduler.deps == StepGraph.of(steps).deps
    calls = _counting(monkeypatch)
    handed = StepGraph.of(steps)
    assert DagScheduler(steps, run_body, graph=handed).deps is handed.deps
    assert len(calls) == 1
