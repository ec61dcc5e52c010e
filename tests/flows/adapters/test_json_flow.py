"""Our flows write their parameters for the API themselves, exactly as Prefect would, so a run never
imports FastAPI (Prefect's encoder) before its first step; and they build their parameter schema
(which only a deployment reads) when it is first read, not when they are defined."""

from __future__ import annotations

import enum
import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import prefect.flows
import pytest
import yaml
from prefect.flows import Flow
from prefect.settings import PREFECT_API_URL
from prefect.utilities.callables import parameter_schema

from prefect_agentenv.documents.benchmarks.validation import load_benchmark
from prefect_agentenv.flows.adapters.json_flow import JsonParameterFlow, _schema_on_first_read
from prefect_agentenv.flows.adapters.task_parameter import resolve_task_parameter
from prefect_agentenv.flows.agent_task import agent_task
from prefect_agentenv.flows.benchmark import benchmark

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


class _Colour(str, enum.Enum):
    RED = "red"


def _task_parameters() -> list[dict[str, Any]]:
    documents = [resolve_task_parameter(str(p)) for p in [EXAMPLES / "reply-to-dana.json",
                                                          *sorted((EXAMPLES / "tasks").glob("*.json"))]]
    assert len(documents) > 2
    return [{"task": doc, "seeds": {"customer": "Dana"}, "overrides": {"a2a_agent_id": "scripted"}, "keep": False,
             "report_path": None, "step_task_runs": True} for doc in documents] + [
        {"task": list(documents[0].steps), "seeds": None},  # a bare list of steps
        {"task": str(EXAMPLES / "reply-to-dana.json"), "report_path": Path("reports") / "one.json"},
    ]


@pytest.mark.parametrize("parameters", _task_parameters(), ids=lambda p: str(type(p["task"]).__name__))
def test_task_parameters_are_written_as_prefect_writes_them(parameters: dict[str, Any]) -> None:
    assert agent_task.serialize_parameters(parameters) == Flow.serialize_parameters(agent_task, parameters)


def test_benchmark_parameters_are_written_as_prefect_writes_them() -> None:
    document = load_benchmark(EXAMPLES / "benchmark.yaml")
    for parameters in ({"path": str(EXAMPLES / "benchmark.yaml"), "overrides": {"model": "m"}, "epochs": 2,
                        "concurrency": None, "dispatch": "subflow"},
                       {"benchmark": document, "run_id": "r-1", "report_dir": None}):
        mine = benchmark.serialize_parameters(parameters)
        assert mine == Flow.serialize_parameters(benchmark, parameters)
        assert json.loads(json.dumps(mine)) == mine  # plain JSON, nothing left for the API client to encode


def test_other_values_are_left_to_prefects_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    parameters = {"when": when, "colour": _Colour.RED, "ids": {1: "a"}, "keep": True, "nested": [{"at": when}],
                  "by_colour": {_Colour.RED: 1}}
    expected = Flow.serialize_parameters(agent_task, parameters)
    handed: list[set[str]] = []
    original = Flow.serialize_parameters

    def spy(self: Flow[Any, Any], values: dict[str, Any]) -> dict[str, Any]:
        handed.append(set(values))
        return original(self, values)

    monkeypatch.setattr(Flow, "serialize_parameters", spy)
    assert agent_task.serialize_parameters(parameters) == expected
    assert list(agent_task.serialize_parameters(parameters)) == list(parameters)  # the order kept
    assert handed[0] == {"when", "colour", "ids", "nested", "by_colour"}  # only what is not plain JSON, a path or a model


_PROBE = """
import asyncio, json, sys
from prefect_agentenv.flows.agent_task import agent_task
from prefect_agentenv.flows.benchmark import benchmark

async def main():
    one = await agent_task([{"id": "a", "type": "test_noop"}], seeds={"x": "y"}, return_state=True)
    bench = await benchmark(path=sys.argv[1], epochs=2, concurrency=2, return_state=True)
    return [one.type.value, bench.type.value]

states = asyncio.run(main())
built = [flow.__dict__.get("_parameter_schema") is not None for flow in (agent_task, benchmark)]
print(json.dumps({"states": states, "fastapi": "fastapi" in sys.modules, "schemas built": built}))
"""


@pytest.mark.usefixtures("prefect_harness", "agentenv_home")
def test_a_run_and_a_benchmark_never_import_fastapi_or_build_a_parameter_schema(tmp_path: Path) -> None:
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump({"name": "Light", "slug": "light-parameters", "tasks": [
        {"id": "one", "steps": [{"id": "grade", "type": "test_score", "score": 1.0}]}]}))
    env = {**os.environ, "PREFECT_API_URL": str(PREFECT_API_URL.value())}
    out = subprocess.run([sys.executable, "-c", _PROBE, str(path)], env=env, capture_output=True, text=True,
                         timeout=180, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"states": ["COMPLETED", "COMPLETED"], "fastapi": False,
                                                                 "schemas built": [False, False]}


@pytest.mark.parametrize("flow", [agent_task, benchmark], ids=lambda f: f.name)
def test_the_parameter_schema_read_later_is_prefects(flow: JsonParameterFlow[Any, Any]) -> None:
    assert flow.parameters == parameter_schema(flow.fn)
    assert flow.parameters is flow.parameters  # built once
    assert "task" in flow.parameters.properties or "path" in flow.parameters.properties


def test_a_deployment_of_a_flow_gets_its_parameter_schema() -> None:
    deployment = agent_task.to_deployment(name="schema-check")
    assert deployment._parameter_openapi_schema == parameter_schema(agent_task.fn)


def test_only_the_flow_being_built_gets_a_placeholder() -> None:
    def mine(x: int) -> int:
        return x

    def other(y: str) -> str:
        return y

    original = prefect.flows.parameter_schema
    with _schema_on_first_read(mine):
        assert prefect.flows.parameter_schema(other) == parameter_schema(other)
        assert prefect.flows.parameter_schema(mine) != parameter_schema(mine)
        built_meanwhile = Flow(other)
    assert prefect.flows.parameter_schema is original
    assert built_meanwhile.parameters == parameter_schema(other)
    lazy = JsonParameterFlow(mine)
    assert prefect.flows.parameter_schema is original
    assert lazy.__dict__["_parameter_schema"] is None
    assert lazy.parameters == parameter_schema(mine)
    assert lazy.with_options(name="renamed").parameters == parameter_schema(mine)
