"""Agent or infrastructure: each failed task run is classified from what failed; infrastructure
failures are retried as new runs in fresh envs and agents and labelled; a benchmark with more of
them than its ``infrastructure.max_error_rate`` fails loudly (``bench`` exits 5)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.blocks.environment import AgentEnvironment
from prefect_agentenv.documents import validate_data
from prefect_agentenv.envs.catalog import REFERENCE_ENVS
from prefect_agentenv.flows.adapters.failures import classify_report
from prefect_agentenv.flows.agent_task import run_task_document
from prefect_agentenv.flows.benchmark import benchmark
from prefect_agentenv.results import FailureCause
from prefect_agentenv.results.store.run_store import read_results

from .envs import FAULT_ENVS
from .harness import CLI
from .helpers import publish_script

RAISES = """
async def verify(mcp_url):
    raise RuntimeError("the check itself is broken")
"""
SCRIPTED = {"id": "agent", "type": "deploy_agent", "a2a_agent_id": "scripted", "agent_name": "a", "depends_on": []}
CAPITAL = "What is the capital of France? Answer with the city only."


def _prompt(prompt: str, **extra: Any) -> dict[str, Any]:
    return {"id": "ask", "type": "prompt_agent", "agent_name": "a", "prompt": prompt, **extra}


def _wants_paris(**extra: Any) -> dict[str, Any]:
    return {"id": "check", "type": "agent_prompt_response_verifier", "prompt_id": "ask", "verifier_id": "check",
            "response_contains": ["Paris"], **extra}


CASES = [
    pytest.param([{"id": "env", "type": "deploy_env", "env_id": "exiting"}],
                 ("infrastructure", "deploy_failed", "env", "DeployError", True), id="env-exits-at-once"),
    pytest.param([{"id": "env", "type": "deploy_env", "env_id": "silent", "startup_timeout_seconds": 1}],
                 ("infrastructure", "deploy_failed", "env", "DeployError", True), id="env-never-answers-its-card"),
    pytest.param([{"id": "env", "type": "deploy_env", "env_id": "dying", "depends_on": []},
                  {"id": "wait", "type": "test_sleep", "seconds": 1.5}],
                 ("infrastructure", "instance_exited", "env", "InstanceExitedError", True), id="env-dies-before-prompt"),
    pytest.param([{"id": "env", "type": "deploy_env", "env_id": "plain", "depends_on": []},
                  {"id": "raises", "type": "env_outcome_verifier", "env_id": "plain", "verifier_id": "raises",
                   "script_artifact_id": "raises"}],
                 ("infrastructure", "verifier_failed", "raises", "StepError", True), id="verifier-raises"),
    pytest.param([{"id": "env", "type": "deploy_env", "env_id": "plain", "depends_on": []},
                  {"id": "seed", "type": "test_fail", "message": "the seed data could not be loaded"}],
                 ("infrastructure", "setup_failed", "seed", "RuntimeError", True), id="setup-step-fails"),
    pytest.param([{"id": "env", "type": "deploy_env", "env_id": "${INFRA_TEST_UNSET_ENV}"}],
                 ("infrastructure", "not_started", None, None, False), id="run-refused-before-it-started"),
    pytest.param([{"id": "agent", "type": "deploy_agent", "a2a_agent_id": "silent-agent", "agent_name": "a"},
                  _prompt("hi", timeout_seconds=2)],
                 ("agent", "prompt_timeout", "ask", "StepError", False), id="prompt-times-out"),
    pytest.param([SCRIPTED, _prompt('PLAN: {"fail": {"error_type": "quota", "message": "out of budget"}}')],
                 ("agent", "agent_error", "ask", "StepError", False), id="agent-answers-with-an-error"),
    pytest.param([SCRIPTED, _prompt(CAPITAL), _wants_paris()],
                 ("agent", "below_one", None, None, False), id="agent-answers-wrongly"),
]


@pytest.fixture
def fault_envs(store_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("exiting", "silent", "dying", "plain", "silent-agent"):
        monkeypatch.setitem(REFERENCE_ENVS, name, FAULT_ENVS[name])
    from prefect_agentenv.agents.catalog import REFERENCE_AGENTS

    monkeypatch.setitem(REFERENCE_AGENTS, "silent-agent", FAULT_ENVS["silent-agent"])
    monkeypatch.delenv("INFRA_TEST_UNSET_ENV", raising=False)
    publish_script("raises", RAISES)
    return store_home


@pytest.mark.parametrize(("steps", "expected"), CASES)
async def test_a_failed_task_run_is_classified_from_what_failed(
        fault_envs: Path, steps: list[dict[str, Any]], expected: tuple[str, str, str | None, str | None, bool]) -> None:
    checked = validate_data(steps, default_id="classified")
    assert checked.ok and checked.document is not None, [p.render() for p in checked.problems]
    report = await run_task_document(checked.document, execute_in_prefect=False, publish=False)
    cause = classify_report(report, checked.document)
    assert cause is not None, report.model_dump(mode="json", include={"outcome", "error", "steps"})
    assert (cause.kind, cause.reason, cause.step_id, cause.error_type, cause.retryable) == expected, cause
    assert cause.message and "\n" not in cause.message


def _flaky_command(marker: Path) -> list[str]:
    """The email env, but its first launch exits at once with code 3 (as a port or image hiccup would)."""
    email = shlex.join(REFERENCE_ENVS["email"].command())
    return ["sh", "-c", f"if [ -e {shlex.quote(str(marker))} ]; then exec {email}; fi; "
                        f"touch {shlex.quote(str(marker))}; echo 'not today' >&2; exit 3"]


@pytest.mark.usefixtures("prefect_harness", "agentenv_home")
@pytest.mark.parametrize("task_runs_as", ["subflows", "tasks"])
async def test_an_env_that_fails_its_first_launch_is_retried_in_a_fresh_run_and_a_wrong_answer_is_not(
        tmp_path: Path, task_runs_as: str) -> None:
    env_id = f"flaky-{uuid.uuid4().hex[:8]}"
    await AgentEnvironment(command=_flaky_command(tmp_path / "launched")).asave(env_id)
    tasks = [{"id": "flaky", "steps": [{"id": "env", "type": "deploy_env", "env_id": env_id},
                                       {"id": "grade", "type": "test_score", "score": 1.0}]},
             {"id": "wrong", "steps": [SCRIPTED, _prompt(CAPITAL), _wants_paris()]}]
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump({"name": "Flaky", "slug": "flaky-infra", "task_runs_as": task_runs_as,
                                    "step_task_runs": task_runs_as == "subflows", "tasks": tasks,
                                    "infrastructure": {"retries": 2, "backoff_seconds": 0.1}}))
    state = await benchmark(path=str(path), return_state=True)
    out = await state.aresult(raise_on_failure=False)
    assert state.is_completed(), state.message
    with get_artifact_store() as store:
        results = {r.task_id: r for r in read_results(store, "flaky-infra", out["run_id"])}

    flaky = results["flaky"]
    assert (flaky.outcome.value, flaky.failure, flaky.attempts) == ("PASSED", None, 2)
    (first,) = flaky.retried
    assert (first.failure.kind, first.failure.reason, first.failure.step_id) == ("infrastructure", "deploy_failed", "env")
    assert first.failure.error_type == "DeployError" and "exit code 3" in (first.failure.message or "")
    ran_as = "task_run_id" if task_runs_as == "tasks" else "flow_run_id"
    assert getattr(first, ran_as) and getattr(first, ran_as) != getattr(flaky, ran_as)  # a new run, a fresh env

    wrong = results["wrong"]
    assert (wrong.outcome.value, wrong.attempts, wrong.retried) == ("BELOW_ONE", 1, [])
    assert wrong.failure == FailureCause(kind="agent", reason="below_one", message="graded 0.000, below 1")
    failures = out["summary"]["failures"]
    assert (failures["agent"], failures["infrastructure"], failures["retried"], failures["recovered"]) == (1, 0, 1, 1)
    assert "2 attempts" in out["markdown"] and "## Infrastructure failures" in out["markdown"]


def test_an_env_that_never_starts_stays_an_infrastructure_failure_and_fails_the_benchmark_with_exit_5(
        api_url: str, agentenv_home: Path, tmp_path: Path) -> None:
    tasks = [{"id": "fine", "steps": [{"id": "grade", "type": "test_score", "score": 1.0}]},
             {"id": "down", "steps": [{"id": "env", "type": "deploy_env", "env_id": "silent",
                                       "startup_timeout_seconds": 1},
                                      {"id": "grade", "type": "test_score", "score": 1.0}]}]
    bench = tmp_path / "bench.yaml"
    bench.write_text(yaml.safe_dump({"name": "Down", "slug": "infra-down", "tasks": tasks, "infrastructure": {
        "retries": 1, "backoff_seconds": 0.1, "exclude_from_mean": True, "max_error_rate": 0.25}}))
    env = {**os.environ, "PREFECT_API_URL": api_url, "PREFECT_AGENTENV_HOME": str(agentenv_home),
           "PREFECT_LOGGING_LEVEL": "WARNING"}
    done = subprocess.run([sys.executable, str(CLI), "bench", str(bench), "--report-dir", str(tmp_path / "out")],
                          env=env, text=True, capture_output=True, timeout=240)
    assert done.returncode == 5, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("the benchmark failed:")]
    assert line.startswith("the benchmark failed: 1 of 2 task runs (50%) failed for infrastructure"), done.stderr
    assert "infrastructure.max_error_rate 0.25" in line and "deploy_failed ×1" in line

    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["infrastructure_error"].startswith("1 of 2 task runs (50%) failed for infrastructure")
    assert summary["markdown"].startswith("# Down — run ") and "**The benchmark failed: 1 of 2" in summary["markdown"]
    # Left out of the mean, and said so: the mean is the one run the agent had.
    assert summary["summary"]["mean_score"] == 1.0 and summary["counts"]["excluded"] == 1
    assert summary["summary"]["counts"]["failed"] == 1 and summary["summary"]["pass_rate"] == 1.0
    with get_artifact_store() as store:
        down = next(r for r in read_results(store, "infra-down", summary["run_id"]) if r.task_id == "down")
    assert down.failure is not None and down.failure.excluded and down.failure.reason == "deploy_failed"
    assert (down.outcome.value, down.attempts, len(down.retried)) == ("FAILED", 2, 1)
    assert "did not become ready within 1s" in (down.failure.message or "")


async def test_a_store_that_fails_after_the_prompt_is_infrastructure_not_the_agents_answer(agentenv_home: Path) -> None:
    """The agent answered and wrote its file; storing it failed because the store's artifacts
    folder cannot be created (a file stands where it goes; run records still write): the run is
    the store's failure, and retried."""
    with get_artifact_store() as store:
        blocked = Path(store.location) / "artifacts"
    blocked.parent.mkdir(parents=True, exist_ok=True)
    blocked.write_text("not a folder")
    steps = [
        {**SCRIPTED, "agent_config": {"plan": {"reply": "done", "files": [{"path": "/app/out/n.md", "content": "hi"}]}}},
        _prompt("write it"),
        {"id": "collect", "type": "collect_artifacts", "agent_name": "a", "base_path": "/app/out"},
    ]
    checked = validate_data(steps, default_id="store-down")
    assert checked.ok and checked.document is not None, [p.render() for p in checked.problems]
    report = await run_task_document(checked.document, execute_in_prefect=False, publish=False)
    assert report.context.prompt_responses, "the prompt went out before the store failed"
    cause = classify_report(report, checked.document)
    assert cause is not None, report.model_dump(mode="json", include={"outcome", "error", "steps"})
    assert (cause.kind, cause.reason, cause.step_id, cause.error_type, cause.retryable) == (
        "infrastructure", "peer_unavailable", "collect", "PeerUnavailableError", True), cause
    assert cause.message and cause.message.startswith("storing files collected from")


async def test_a_prefect_api_that_answers_500_while_a_block_loads_is_a_retried_prefect_api_failure(
        agentenv_home: Path) -> None:
    """At scale a busy server answers a block lookup with a 500 (a PostgreSQL-backed server with 32
    flow runs starting did): that is the API's failure, which the next attempt may not meet, not a
    configuration mistake that would fail again."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from prefect.settings import PREFECT_API_URL, temporary_settings

    class Failing(BaseHTTPRequestHandler):
        def _fail(self) -> None:
            self.send_response(500)
            self.send_header("content-type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"exception_message": "Internal Server Error"}')

        do_GET = do_POST = _fail

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Failing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        checked = validate_data([{"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": []}],
                                default_id="api-500")
        assert checked.ok and checked.document is not None
        with temporary_settings({PREFECT_API_URL: f"http://127.0.0.1:{server.server_port}/api"}):
            report = await run_task_document(checked.document, execute_in_prefect=False, publish=False)
    finally:
        server.shutdown()
        server.server_close()
    cause = classify_report(report, checked.document)
    assert cause is not None, report.model_dump(mode="json", include={"outcome", "error", "steps"})
    assert (cause.kind, cause.reason, cause.step_id, cause.error_type, cause.retryable) == (
        "infrastructure", "prefect_api", "email", "PrefectApiUnavailableError", True), cause
    assert "500 Internal Server Error" in (cause.message or "")


@pytest.mark.usefixtures("prefect_harness", "agentenv_home")
async def test_an_agent_its_process_limit_stops_is_the_agents_failure_not_retried() -> None:
    """A limit is the task's rule: an agent that forks past it (here at its start, as root too) fails itself."""
    from prefect_agentenv.blocks import A2AAgent

    await A2AAgent(command=["/bin/sh", "-c", "for i in $(seq 100); do sleep 5 & done; wait"], process_limit=20,
                   startup_timeout_seconds=20).save("forking-agent", overwrite=True)
    checked = validate_data([{**SCRIPTED, "a2a_agent_id": "forking-agent"}, _prompt("hi")], default_id="limited")
    assert checked.ok and checked.document is not None, [p.render() for p in checked.problems]
    report = await run_task_document(checked.document, execute_in_prefect=False, publish=False)
    cause = classify_report(report, checked.document)
    assert cause is not None
    assert (cause.kind, cause.reason, cause.step_id, cause.error_type, cause.retryable) == (
        "agent", "resource_limit", "agent", "ResourceLimitError", False), cause
    assert "stopped by its process limit (process_limit=20)" in (cause.message or "")
