"""Warm pools: a benchmark with ``pool: true`` reuses env and agent processes, and nothing leaks
from one task run to the next (real email env and scripted agent on loopback)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
import yaml

from prefect_agentenv.flows.benchmark import benchmark

pytestmark = pytest.mark.usefixtures("prefect_harness", "agentenv_home")

PLAN = {"tool_calls": [{"tool": "send", "arguments": {"to": "dana@northwind.example", "subject": "Hello",
                                                      "body": "Written by the first task run."}}],
        "files": [{"path": "/app/artifact/note.md", "content": "left behind?"}],
        "reply": "Sent."}


def steps(*, write: bool) -> list[dict[str, Any]]:
    """Both tasks deploy the same env and the same agent; only the writer prompts it."""
    out: list[dict[str, Any]] = [
        {"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": []},
        {"id": "assistant", "type": "deploy_agent", "a2a_agent_id": "scripted", "agent_name": "assistant",
         "env_ids": ["email"], "agent_config": {"plan": PLAN}, "depends_on": ["email"]},
    ]
    if write:
        out.append({"id": "reply", "type": "prompt_agent", "agent_name": "assistant", "prompt_id": "reply",
                    "prompt": "Write to Dana.", "depends_on": ["assistant"]})
    last = "reply" if write else "assistant"
    out += [
        {"id": "sent", "type": "env_state_verifier", "env_id": "email", "verifier_id": "sent", "depends_on": [last],
         "assertions": [{"assert": "record_count", "id": "sent", "resource": "sent", "equals": 1 if write else 0}]},
        {"id": "files", "type": "verify_sandbox", "agent_name": "assistant", "verifier_id": "files", "depends_on": [last],
         "checks": [{"id": "note", "kind": "file_exists", "path": "/app/artifact/note.md"}]},
    ]
    return out


async def test_a_pooled_task_run_sees_a_clean_env_and_sandbox_after_one_that_wrote(tmp_path: Path) -> None:
    bench = tmp_path / "bench.yaml"
    bench.write_text(yaml.safe_dump({"name": "Pool", "slug": "pool-leak", "concurrency": 1, "pool": True, "tasks": [
        {"id": "writer", "steps": steps(write=True)}, {"id": "reader", "steps": steps(write=False)}]}))
    reports_dir = tmp_path / "reports"

    state = await benchmark(path=str(bench), report_dir=str(reports_dir), return_state=True)

    assert state.is_completed(), state.message
    reports = {p.name.split(".")[0]: json.loads(p.read_text()) for p in reports_dir.glob("*-epoch*.json")}
    writer, reader = reports["writer"], reports["reader"]
    assert writer["outcome"] == "PASSED", writer["error"]
    # The same processes served both task runs...
    for kind, name in (("deployed_envs", "email"), ("deployed_agents", "assistant")):
        assert writer["context"][kind][name]["instance_id"] == reader["context"][kind][name]["instance_id"]
    # ...and the reader saw neither the writer's email nor its file.
    verifications = reader["context"]["metadata"]["verifications"]
    assert verifications["sent"]["score"] == 1.0, verifications["sent"]
    assert verifications["files"]["results"][0]["result"] == "fail"  # the file is gone
    # Handing back is not stopping: the pool stopped the processes when the benchmark ended.
    assert all(t["ok"] and "back to the pool" in t["label"] for t in reader["teardown"]
               if t["kind"] in ("env", "agent"))
    assert not (Path(reader["context"]["deployed_agents"]["assistant"]["sandbox"])).exists()


async def test_a_shared_lookup_keeps_a_success_and_asks_again_after_a_failure() -> None:
    from prefect_agentenv.runtime.resources.run import shared_lookup

    table: dict[tuple[str, ...], Any] = {}
    calls = []

    async def lookup() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("the API did not answer")
        return "spec"

    with pytest.raises(ConnectionError):
        await shared_lookup(table, ("env", "email"), lookup)
    assert [await shared_lookup(table, ("env", "email"), lookup) for _ in range(3)] == ["spec"] * 3
    assert len(calls) == 2  # the failure was not kept; the success was


@pytest.mark.parametrize(("task_runs_as", "pool"), [("tasks", False), ("subflows", False), ("subflows", True)])
async def test_a_benchmark_looks_each_block_up_once_for_all_its_task_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, task_runs_as: str, pool: bool) -> None:
    """Block lookups are Prefect API round trips: a benchmark run reads each env, agent and model
    endpoint block once, whether its task runs are subflows or task runs, pooled or not."""
    from prefect_agentenv.resolution import block_lookup, models, servers

    looked_up: list[tuple[str, str]] = []

    async def counted(block_type: Any, name: str) -> Any:
        looked_up.append((block_type.__name__, name))
        return await block_lookup.load_block(block_type, name)

    for module in (servers, models):
        monkeypatch.setattr(module, "load_block", counted)
    bench = tmp_path / "bench.yaml"
    bench.write_text(yaml.safe_dump({"name": "Lookups", "slug": f"lookups-{task_runs_as}-{str(pool).lower()}", "concurrency": 2,
                                     "epochs": 3, "pool": pool, "task_runs_as": task_runs_as,
                                     "tasks": [{"id": "reader", "steps": steps(write=False)[:3]}]}))

    state = await benchmark(path=str(bench), return_state=True)

    assert state.is_completed(), state.message
    assert (await state.aresult())["counts"]["passed"] == 3
    assert looked_up, "the env and agent ids were never looked up as blocks"
    assert sorted(looked_up) == sorted(set(looked_up)), looked_up  # each once, for three task runs


async def test_an_agent_on_the_mock_model_is_pooled_with_it(tmp_path: Path) -> None:
    """The llm agent calls the built-in mock model: the pool hands both on together."""
    task_steps = [
        {"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": []},
        {"id": "assistant", "type": "deploy_agent", "a2a_agent_id": "llm", "agent_name": "assistant",
         "env_ids": ["email"], "depends_on": ["email"]},
        {"id": "hello", "type": "prompt_agent", "agent_name": "assistant", "prompt_id": "hello",
         "prompt": "Say hello.", "depends_on": ["assistant"]},
        {"id": "quiet", "type": "env_state_verifier", "env_id": "email", "verifier_id": "quiet",
         "depends_on": ["hello"], "assertions": [{"assert": "record_count", "id": "none", "resource": "sent",
                                                  "equals": 0}]},
    ]
    bench = tmp_path / "bench.yaml"
    bench.write_text(yaml.safe_dump({"name": "Pool", "slug": "pool-mock-model", "concurrency": 1, "pool": True,
                                     "tasks": [{"id": "first", "steps": task_steps},
                                               {"id": "second", "steps": task_steps}]}))
    reports_dir = tmp_path / "reports"

    state = await benchmark(path=str(bench), report_dir=str(reports_dir), return_state=True)

    assert state.is_completed(), state.message
    reports = {p.name.split(".")[0]: json.loads(p.read_text()) for p in reports_dir.glob("*-epoch*.json")}
    first, second = reports["first"], reports["second"]
    assert first["outcome"] == second["outcome"] == "PASSED", (first["error"], second["error"])
    agents = [r["context"]["deployed_agents"]["assistant"] for r in (first, second)]
    assert agents[0]["instance_id"] == agents[1]["instance_id"]  # one agent process served both task runs
    for report in (first, second):
        models = [t for t in report["teardown"] if t["kind"] == "model"]
        assert len(models) == 1 and models[0]["ok"] and models[0]["label"].endswith("back to the pool")


async def test_an_agent_still_working_when_its_task_run_ends_is_stopped_not_pooled(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The first task run is cut by its timeout while its agent works on a prompt; that agent must
    not serve the next task run (its late tool calls and files would land there)."""
    deploy = [
        {"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": []},
        {"id": "assistant", "type": "deploy_agent", "a2a_agent_id": "scripted", "agent_name": "assistant",
         "env_ids": ["email"], "agent_config": {"plan": {"reply": "Done at last.", "sleep_seconds": 120}},
         "depends_on": ["email"]},
    ]
    check = {"id": "sent", "type": "env_state_verifier", "env_id": "email", "verifier_id": "sent",
             "depends_on": ["assistant"],
             "assertions": [{"assert": "record_count", "id": "none", "resource": "sent", "equals": 0}]}
    busy = [*deploy, {"id": "ask", "type": "prompt_agent", "agent_name": "assistant", "prompt_id": "ask",
                      "prompt": "Take your time.", "depends_on": ["assistant"]}]
    bench = tmp_path / "bench.yaml"
    bench.write_text(yaml.safe_dump({"name": "Pool", "slug": "pool-still-working", "concurrency": 1, "pool": True,
                                     "tasks": [{"id": "busy", "steps": busy, "timeout_seconds": 20},
                                               {"id": "after", "steps": [*deploy, check]}]}))
    reports_dir = tmp_path / "reports"

    with caplog.at_level(logging.INFO, logger="prefect_agentenv.runtime.resources.pool"):
        state = await benchmark(path=str(bench), report_dir=str(reports_dir), return_state=True)

    assert state.is_completed(), state.message
    stopped = [r.getMessage() for r in caplog.records if "stopped, not pooled" in r.getMessage()]
    assert len(stopped) == 1 and stopped[0].startswith("agent assistant ("), stopped
    busy_agent = stopped[0].split("(")[1].split(")")[0]
    after = json.loads(next(reports_dir.glob("after*-epoch*.json")).read_text())
    assert after["outcome"] == "PASSED", after["error"]
    assert after["context"]["deployed_agents"]["assistant"]["instance_id"] != busy_agent  # a fresh agent
