"""The command line: validate, schema, run (exit codes, report, Ctrl-C)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from prefect_agentenv.cli import app

runner = CliRunner()
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def write(tmp_path: Path, name: str, steps: object) -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(steps))
    return p


def test_validate_exits_0_for_a_valid_document(tmp_path: Path) -> None:
    path = write(tmp_path, "ok.json", [{"id": "a", "type": "test_noop"}])
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    assert "ok (1 steps)" in result.output


def test_validate_exits_2_and_lists_every_problem(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.json", [
        {"id": "a", "type": "test_noop", "depends_on": ["nope"]},
        {"id": "a", "type": "test_nop"},
    ])
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    assert "depends on unknown step 'nope'" in result.output
    assert "duplicate step id 'a'" in result.output
    assert "did you mean 'test_noop'" in result.output


def test_validate_reports_the_line_and_column_of_invalid_json(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('[\n  {"id": "a", "type": "test_noop"\n  {"id": "b"}\n]')
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    assert "line 3, column 3" in result.output


def test_schema_prints_a_json_schema_covering_every_step_type() -> None:
    result = runner.invoke(app, ["schema"])
    assert result.exit_code == 0
    schema = json.loads(result.output)
    mapping = schema["$defs"]["TaskDocument"]["properties"]["steps"]["items"]["discriminator"]["mapping"]
    assert schema["anyOf"][1]["type"] == "array", "a bare list of steps is a document too"
    assert {"deploy_env", "prompt_agent", "rubrics_verifier", "collect_artifacts"} <= set(mapping)


def test_run_refuses_an_invalid_document_with_exit_2(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.json", [{"id": "a", "type": "prompt_agent", "agent_name": "x", "prompt_id": "p",
                                          "prompt": "hi"}])
    result = runner.invoke(app, ["run", str(path)])
    assert result.exit_code == 2
    assert "agent 'x' is not provided by any ancestor step" in result.output


def test_run_rejects_a_malformed_seed() -> None:
    result = runner.invoke(app, ["run", "whatever.json", "--seed", "novalue"])
    assert result.exit_code == 2 and "KEY=VALUE" in result.output


def test_dry_run_prints_the_steps_in_parallel_waves(tmp_path: Path) -> None:
    path = write(tmp_path, "plan.json", [
        {"id": "a", "type": "test_noop", "depends_on": []},
        {"id": "b", "type": "test_noop", "depends_on": []},
        {"id": "c", "type": "test_noop"},
    ])
    result = runner.invoke(app, ["run", str(path), "--dry-run"])
    assert result.exit_code == 0
    assert "wave 1: a (test_noop), b (test_noop)" in result.output
    assert "wave 2: c (test_noop)" in result.output


@pytest.fixture
def cli_env(prefect_harness: None, agentenv_home: Path) -> dict[str, str]:
    """Environment for a CLI subprocess talking to the test run's Prefect API."""
    from prefect.settings import PREFECT_API_URL

    return {**os.environ, "PREFECT_API_URL": str(PREFECT_API_URL.value()), "PREFECT_AGENTENV_HOME": str(agentenv_home)}


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "prefect_agentenv.cli", *args]


def test_run_exits_0_and_writes_the_report_when_the_run_completes(tmp_path: Path, cli_env: dict[str, str]) -> None:
    path = write(tmp_path, "good.json", [{"id": "a", "type": "test_noop", "depends_on": []}])
    out = tmp_path / "report.json"
    proc = subprocess.run(cli("run", str(path), "--report", str(out)), env={**cli_env, "PREFECT_LOGGING_LEVEL": "INFO"},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert report["task_id"] == "good" and report["status"] == "completed"
    assert "task good: UNSCORED" in proc.stdout
    # The process ends without tearing the interpreter down, but only after Prefect's workers sent
    # what they held: the step's task run (events) and the flow run's log lines reached the API.
    task_runs, logs = asyncio.run(_task_runs_and_logs(report["flow_run_id"]))
    assert [(r.name, r.state.type.value if r.state else None) for r in task_runs] == [("a", "COMPLETED")]
    assert any("task good: UNSCORED" in line.message for line in logs), [line.message for line in logs]
    # Prefect's line per flow and task run reached the API (the UI shows them), not the terminal.
    assert any("Finished in state" in line.message for line in logs), [line.message for line in logs]
    assert "Finished in state" not in proc.stderr and "Beginning flow run" not in proc.stderr, proc.stderr


def test_run_names_the_mock_judge_on_its_result_line(tmp_path: Path, cli_env: dict[str, str]) -> None:
    """The worked path's task (examples/judge-gate.yaml), its judge the built-in mock model left unscripted:
    it passes every criterion, and the line that shows the score says so."""
    bench = yaml.safe_load((EXAMPLES / "judge-gate.yaml").read_text())
    steps = json.loads(json.dumps(bench["tasks"][0]["steps"]).replace("<signer>", "Sam"))
    del steps[-1]["grading_policy_prompt"]
    path = write(tmp_path, "mock-judged.json", {"id": "mock-judged", "steps": steps})
    proc = subprocess.run(cli("run", str(path)), env=cli_env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "task mock-judged: PASSED score=1.000 (judged by the mock model: every criterion passes unless " \
           "scripted) status=completed" in proc.stdout


def test_run_verbose_prints_prefects_line_for_every_flow_and_task_run(tmp_path: Path,
                                                                      cli_env: dict[str, str]) -> None:
    path = write(tmp_path, "good.json", [{"id": "a", "type": "test_noop", "depends_on": []}])
    env = {k: v for k, v in cli_env.items() if k != "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"}
    proc = subprocess.run(cli("run", str(path), "-v"), env={**env, "PREFECT_LOGGING_LEVEL": "INFO"},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Beginning flow run" in proc.stderr and "Task run 'a' - Finished in state Completed()" in proc.stderr


async def _task_runs_and_logs(flow_run_id: str) -> tuple[list[Any], list[Any]]:
    from uuid import UUID

    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    from prefect_reads import flushed_logs, settled_task_runs

    runs = await settled_task_runs([UUID(flow_run_id)])
    logs = await flushed_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[UUID(flow_run_id)])))
    return runs, logs


def test_run_exits_1_when_a_step_fails_the_task(tmp_path: Path, cli_env: dict[str, str]) -> None:
    path = write(tmp_path, "bad.json", [{"id": "a", "type": "test_fail", "depends_on": []}])
    proc = subprocess.run(cli("run", str(path)), env=cli_env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "failed" in proc.stdout


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_or_a_cancellation_stops_what_the_run_started(tmp_path: Path, cli_env: dict[str, str],
                                                             sig: signal.Signals) -> None:
    marker, started = tmp_path / "stopped.txt", tmp_path / "started.txt"
    path = write(tmp_path, "long.json", [
        {"id": "deploy", "type": "test_record", "marker_file": str(marker), "started_file": str(started),
         "depends_on": []},
        {"id": "wait", "type": "test_sleep", "seconds": 60},
    ])
    proc = subprocess.Popen(cli("run", str(path)), env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not started.exists() and proc.poll() is None:
            time.sleep(0.1)  # the deploy step's process runs and its teardown is registered
        assert started.exists(), proc.communicate(timeout=30) if proc.poll() is not None else "never started"
        proc.send_signal(sig)  # SIGTERM is how a worker or `serve` stops a run cancelled in the UI
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert marker.exists(), proc.stderr.read() if proc.stderr else ""
    pid = int(marker.read_text().split()[1])
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert proc.returncode != 0



EMIT_THEN_EXIT = """
import sys
from prefect.events import emit_event
from prefect_agentenv import cli
emit_event("agentenv.test.exit", resource={"prefect.resource.id": "agentenv.test"})
print("emitted", flush=True)
if sys.argv[1] == "cli":
    cli._exit_now(0)
"""


def test_a_command_ends_after_prefect_sent_its_events_without_a_leftover_warning(cli_env: dict[str, str]) -> None:
    """An event queued just before the end (a block's load or save) is sent before Prefect's exit
    handler stops its worker: no ``Still processing items: 1 items remaining...`` after the output."""
    proc = subprocess.run([sys.executable, "-c", EMIT_THEN_EXIT, "cli"], env=cli_env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "emitted\n"
    assert "Still processing items" not in proc.stderr, proc.stderr
    # The command that showed it: `agent show` loads the block, and Prefect queues the load's event.
    name = f"exit-{os.getpid()}"
    saved = subprocess.run(cli("agent", "register", name, "--url", "https://agent.example.com", "--overwrite"),
                           env=cli_env, capture_output=True, text=True, timeout=120)
    assert saved.returncode == 0, saved.stderr
    shown = subprocess.run(cli("agent", "show", name), env=cli_env, capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0 and "url: https://agent.example.com" in shown.stdout, shown.stderr
    assert "Still processing items" not in saved.stderr + shown.stderr
