"""The run scope and ``execute_step`` on their own, and that every path goes through them.

No Prefect here: the scope and ``execute_step`` are what a flow run, the step tasks, a session
and the Python API's scoring all stand on (``tests/engine/test_execute.py`` runs those paths).
"""

from __future__ import annotations

import ast
import json
import logging
from pathlib import Path
from typing import Any

import pytest

import prefect_agentenv
from prefect_agentenv.context import RunContext, StepRecord
from prefect_agentenv.engine.execute import execute_step
from prefect_agentenv.engine.run_scope import open_run, open_scoring_run
from prefect_agentenv.exceptions import AgentEnvError, ConfigurationError
from prefect_agentenv.runtime.resources.run import current_run
from prefect_agentenv.steps.base import StepModel
from prefect_agentenv.steps.registry import get_step

pytestmark = pytest.mark.usefixtures("agentenv_home")

PACKAGE = Path(prefect_agentenv.__file__).parent


def step(data: dict[str, Any]) -> StepModel:
    return get_step(str(data["type"])).model.model_validate(data)


async def test_a_run_scope_binds_its_run_and_tears_it_down_however_the_block_ends() -> None:
    stopped: list[str] = []

    async def stop() -> None:
        stopped.append("thing")

    scope = open_run("scoped")
    with pytest.raises(RuntimeError, match="boom"):
        async with scope as run:
            assert current_run() is run and run.workdir.is_dir() and run.task_id == "scoped"
            run.teardown.add("thing", stop)
            raise RuntimeError("boom")
    assert stopped == ["thing"] and [(r.label, r.ok) for r in scope.teardown] == [("thing", True)]
    with pytest.raises(AgentEnvError, match="no task run is active"):
        current_run()
    assert not (run.workdir / "owner.json").exists()  # only a run that writes a report is swept
    assert await scope.close() == scope.teardown and stopped == ["thing"]  # closing again does nothing


async def test_a_reported_run_records_its_owner_and_a_scoring_run_inside_it_reports_to_it() -> None:
    async with open_run("owned", owner=True, flow_run_id="flow-1") as parent:
        owner = json.loads((parent.workdir / "owner.json").read_text())
        assert (owner["run_id"], owner["flow_run_id"]) == (parent.run_id, "flow-1")
        async with open_scoring_run(parent, 2) as scoring:
            assert current_run() is scoring and scoring.workdir == parent.workdir / "scoring-2"
            assert scoring.redact is parent.redact  # what scoring resolves stays out of the parent's report
            scoring.services.without_prefect = "the Prefect API went away"
        assert current_run() is parent
        assert parent.services.without_prefect == "the Prefect API went away"


async def test_what_a_run_resolves_stays_out_of_log_lines_while_another_run_ends(
        caplog: pytest.LogCaptureFixture) -> None:
    async with open_run("goes-on") as going_on:
        async with open_run("ends"):
            pass  # both secret sets are empty, so equal: ending this run must not unregister the other's
        going_on.redact.add("s3cr3t-value")
        logging.getLogger("prefect_agentenv.test").warning("token %s rejected", "s3cr3t-value")
    assert "token *** rejected" in caplog.text and "s3cr3t-value" not in caplog.text


async def test_a_step_that_retries_itself_is_run_again_and_each_attempt_is_recorded() -> None:
    flaky = step({"id": "flaky", "type": "test_fail", "fail_times": 2,
                  "retry_config": {"retry_from_step_id": "flaky", "max_retries": 2, "retry_delay_seconds": 0}})
    record = StepRecord(id="flaky", type="test_fail")
    async with open_run("retries"):
        out = await execute_step(flaky, [RunContext()], record=record)
    assert (record.state, record.attempts, record.error) == ("completed", 3, None)
    assert out.metadata.model_extra["trail"]["flaky"]["attempts"] == 3


async def test_a_tolerated_failure_is_recorded_in_the_context_and_a_fatal_one_raised() -> None:
    tolerated = step({"id": "grumpy", "type": "test_fail", "message": "env was grumpy", "fail_task_on_error": False})
    fatal = step({"id": "boom", "type": "test_fail", "message": "it broke"})
    record = StepRecord(id="grumpy", type="test_fail")
    async with open_run("failures"):
        out = await execute_step(tolerated, [RunContext()], record=record)
        with pytest.raises(RuntimeError, match="it broke"):
            await execute_step(fatal, [RunContext()])
    (row,) = out.metadata.failed_steps
    assert (row.step_id, row.error_type, row.error) == ("grumpy", "RuntimeError", "env was grumpy (attempt 1)")
    assert record.state == "tolerated" and out.metadata.verifications == {}  # not a verifier: no record


async def test_a_step_run_on_its_own_can_only_retry_itself() -> None:
    alone = step({"id": "alone", "type": "test_fail", "retry_config": {"retry_from_step_id": "setup"}})
    record = StepRecord(id="alone", type="test_fail")
    async with open_run("alone"):
        with pytest.raises(ConfigurationError, match="'setup' is not this step.*can only retry itself"):
            await execute_step(alone, [RunContext()], record=record)
    assert record.attempts == 0  # refused before it ran


def _calls(path: Path) -> list[tuple[str, str]]:
    """``(callee, detail)`` for the calls that create or bind a run, or run a step module directly."""
    tree = ast.parse(path.read_text(), str(path))
    step_modules = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                    and node.module == "prefect_agentenv.steps" for alias in node.names}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("RunResources", "bind_run", "unbind_run"):
            found.append((func.id, f"line {node.lineno}"))
        elif isinstance(func, ast.Attribute) and func.attr == "run" and (
                (isinstance(func.value, ast.Name) and func.value.id in step_modules | {"definition"})
                or (isinstance(func.value, ast.Call) and getattr(func.value.func, "id", None) == "get_step")):
            found.append(("a step's run", f"line {node.lineno}"))
    return found


def test_every_path_opens_its_run_with_the_scope_and_runs_its_steps_through_execute_step() -> None:
    allowed = {"runtime/resources/run.py": {"bind_run", "unbind_run"}, "engine/run_scope.py": {"RunResources", "bind_run",
               "unbind_run"}, "engine/execute.py": {"a step's run"}}
    stray = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if name.startswith("steps/"):
            continue  # a step module is what runs; the engine runs it
        calls = [(callee, where) for callee, where in _calls(path) if callee not in allowed.get(name, set())]
        if calls:
            stray[name] = calls
    assert not stray, f"open the run with open_run and run steps with execute_step instead: {stray}"
