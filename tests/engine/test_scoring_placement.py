"""Scoring placement from documents: a task document's and a benchmark's ``scoring`` run as flows.

The records env, the scripted agent and the verify script run for real on loopback; isolated
scoring deploys a second records env per attempt and restores the agent's submission into it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.cli import app
from prefect_agentenv.documents import validate_data
from prefect_agentenv.documents.benchmarks.validation import validate_benchmark_data
from prefect_agentenv.flows.agent_task import agent_task
from prefect_agentenv.flows.benchmark import benchmark
from prefect_reads import settled_task_runs
from scoring_scripts import VERIFY

pytestmark = pytest.mark.usefixtures("prefect_harness", "agentenv_home")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PLAN = {"tool_calls": [{"tool": "create_request", "arguments": {"patient_id": "P1", "cpt_code": "72148",
                                                               "status": "submitted"}}],
        "files": [{"path": "summary.txt", "content": "REQ-0001 submitted"}],
        "reply": "Submitted {tool_results[0][request_id]}."}
FRESH = ("import os, sys; sys.exit(0 if os.getcwd() == '/sandbox' and os.listdir('.') else 1)")
"""Commands run in a fresh confined copy of the (restored) sandbox, at /sandbox."""


@pytest.fixture
def published(agentenv_home: Path, tmp_path: Path) -> None:
    (tmp_path / "verify.py").write_text(VERIFY)
    with get_artifact_store() as store:
        store.publish_environment("clinic", "records", "clinic.json", EXAMPLES / "artifacts" / "clinic.json")
        store.publish_files("checks", {"verify.py": tmp_path / "verify.py"})


def steps(attempts: Path) -> list[dict[str, Any]]:
    """Submit a prior auth and write a file; verify the record, the file and the env seen by a script."""
    attempts.mkdir(parents=True, exist_ok=True)
    return [
        {"id": "records", "type": "deploy_env", "env_id": "records"},
        {"id": "seed", "type": "load_artifact", "env_id": "records", "artifact_id": "clinic"},
        {"id": "agent", "type": "deploy_agent", "a2a_agent_id": "scripted", "agent_name": "assistant",
         "env_ids": ["records"], "agent_config": {"plan": PLAN}},
        {"id": "ask", "type": "prompt_agent", "agent_name": "assistant", "prompt_id": "ask",
         "prompt": "Submit the prior auth for P1."},
        {"id": "state", "type": "env_state_verifier", "env_id": "records", "assertions": [
            {"assert": "record-count", "id": "submitted", "resource": "requests",
             "where": {"status": "submitted", "cpt_code": "72148"}, "equals": 1}]},
        {"id": "checks", "type": "env_outcome_verifier", "env_id": "records", "script_artifact_id": "checks",
         "score_aggregator": "weighted_average", "scoring_env": {"ATTEMPT_DIR": str(attempts)}},
        {"id": "files", "type": "verify_sandbox", "agent_name": "assistant", "checks": [
            {"id": "summary", "kind": "file_contains", "path": "summary.txt", "text": "REQ-0001 submitted"},
            {"id": "fresh", "kind": "command_succeeds", "command": [sys.executable, "-c", FRESH]}]},
    ]


@pytest.mark.usefixtures("published")
async def test_a_task_document_with_isolated_scoring_is_scored_in_a_fresh_env_and_retried_with_its_submission(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAIL_FIRST", "1")
    monkeypatch.setenv("LATE_TOKEN", "late-value")
    result = validate_data({"id": "isolated", "steps": steps(tmp_path / "attempts"), "scoring": {
        "mode": "isolated", "retries": {"max_retries": 1}, "network": "loopback",
        "env": {"SCORING_TOKEN": "${LATE_TOKEN:-early}"}}})
    assert result.ok, [p.render() for p in result.problems]
    state = await agent_task(result.document, return_state=True)
    report = await state.result(raise_on_failure=False)
    assert state.is_completed(), report.get("error")
    verifications = report["context"]["metadata"]["verifications"]
    assert {v: verifications[v]["score"] for v in ("state", "checks", "files")} == {
        "state": 1.0, "checks": 1.0, "files": 1.0}  # the request and the file were restored, in a fresh sandbox
    assert report["scoring"] == {"mode": "isolated", "attempts": 2, "network": "loopback", "env": ["SCORING_TOKEN"]}
    urls = [p.read_text() for p in sorted((tmp_path / "attempts").glob("attempt-*"))]
    agent_env = report["context"]["deployed_envs"]["records"]["mcp_url"]
    assert len(urls) == 2 and len({*urls, agent_env}) == 3  # each attempt in an env of its own
    assert verifications["checks"]["results"][0]["justification"] == "saw ***"  # resolved at scoring, redacted
    assert "late-value" not in json.dumps(report)
    runs = await settled_task_runs([state.state_details.flow_run_id], at_least=7,
                                   until=lambda r: r.name != "checks" or r.state.is_completed())
    assert {"ask", "state", "checks", "files"} <= {r.name for r in runs}  # verifiers are task runs still
    assert next(r for r in runs if r.name == "checks").run_count == 2  # one task run, two attempts


@pytest.mark.usefixtures("published")
async def test_a_benchmark_scores_in_isolation_by_default_and_a_task_overrides_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAIL_FIRST", "1")
    bench = {"name": "Placement", "slug": "placement",
             # Off: a verifier's failure is an infrastructure failure, which would run the shared task again.
             "infrastructure": {"retries": 0},
             "defaults": {"scoring": {"mode": "isolated", "retries": {"max_retries": 1}}},
             "tasks": [{"id": "inherits", "steps": steps(tmp_path / "inherits")},
                       {"id": "shared", "steps": steps(tmp_path / "shared"), "scoring": {"mode": "shared"}}]}
    for task in bench["tasks"]:  # in the agent's own sandbox the 'fresh' probe fails: keep it for isolated only
        if task["id"] == "shared":
            task["steps"] = task["steps"][:-1]
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump(bench))
    state = await benchmark(path=str(path), report_dir=str(tmp_path / "reports"), return_state=True)
    assert state.is_completed(), state.message
    inherits, shared = (json.loads((tmp_path / "reports" / f"{name}.seed0-epoch0.json").read_text())
                        for name in ("inherits", "shared"))
    assert inherits["scoring"]["mode"] == "isolated" and inherits["scoring"]["attempts"] == 2
    assert shared["scoring"]["mode"] == "shared" and shared["scoring"]["attempts"] is None
    # shared scoring is not retried (though it inherits retries): the verifier's failure fails the task
    checks = next(step for step in shared["steps"] if step["id"] == "checks")
    assert (checks["state"], checks["attempts"]) == ("failed", 1) and "the first attempt fails" in checks["error"]
    assert (shared["outcome"], shared["score"]) == ("FAILED", 0.0)
    assert inherits["score"] == pytest.approx(2 / 3)  # isolated, retried: scored (no token, no proxy here)
    seen = {name: [p.read_text() for p in sorted((tmp_path / name).glob("attempt-*"))]
            for name in ("inherits", "shared")}
    assert len(seen["inherits"]) == 2 and inherits["context"]["deployed_envs"]["records"]["mcp_url"] not in seen[
        "inherits"]
    assert seen["shared"] == [shared["context"]["deployed_envs"]["records"]["mcp_url"]]


def test_a_bad_scoring_value_is_a_validation_error_naming_the_field(tmp_path: Path) -> None:
    task = {"id": "bad", "steps": steps(tmp_path / "a"), "scoring": {"mode": "fresh", "retries": {"max_retries": -1},
                                                                     "runtime": {"startup_timeout": 5}}}
    problems = {p.path: p.message for p in validate_data(task).problems}
    assert problems["$.scoring.mode"] == "Input should be 'shared' or 'isolated'"
    assert "greater than or equal to 0" in problems["$.scoring.retries.max_retries"]
    assert problems["$.scoring.runtime"] == "startup_timeout: Extra inputs are not permitted"
    after = {"id": "after", "type": "reset_env", "env_id": "records", "depends_on": ["state"]}
    ordered = validate_data({"id": "t", "steps": [*steps(tmp_path / "b"), after], "scoring": {"mode": "isolated"}})
    assert [(p.path, "after (after state) depends on a verifier" in p.message) for p in ordered.problems] == [
        ("$.scoring.mode", True)]
    bench = {"name": "B", "slug": "b", "defaults": {"scoring": {"network": 7}},
             "tasks": [{"id": "t", "steps": steps(tmp_path / "c"), "scoring": {"mode": "later"}}]}
    paths = {p.path for p in validate_benchmark_data(bench, tmp_path).problems}
    assert {"$.defaults.scoring.network", "$.tasks[0].scoring.mode"} <= paths
    (tmp_path / "bad.json").write_text(json.dumps(task))
    cli = CliRunner().invoke(app, ["run", str(tmp_path / "bad.json")])
    assert cli.exit_code == 2 and "scoring.mode" in cli.output and "Traceback" not in cli.output
