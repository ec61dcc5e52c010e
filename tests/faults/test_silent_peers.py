"""Peers that accept the connection and never answer: an env's data plane and MCP endpoint, an
agent's A2A endpoint and extension, an env or agent whose card never comes. Each fails its step
within the configured timeout with one line naming the peer and its URL; the report is written
and nothing the run started is left running."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from prefect_agentenv.agents.catalog import REFERENCE_AGENTS
from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.envs.catalog import REFERENCE_ENVS
from prefect_agentenv.results.task_report import TaskReport
from prefect_agentenv.settings import get_settings

from .envs import FAULT_ENVS
from .harness import wait_until_gone
from .helpers import run_doc

SILENT_DATA = {"id": "env", "type": "deploy_env", "env_id": "silent-data"}
SILENT_AGENT = {"id": "agent", "type": "deploy_agent", "a2a_agent_id": "silent-agent", "agent_name": "a"}


@pytest.fixture
def silent_peers(store_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The silent fault peers in the catalogues, 1 s connect/read timeouts, data for the fault env."""
    for name in ("silent-data", "silent"):
        monkeypatch.setitem(REFERENCE_ENVS, name, FAULT_ENVS[name])
    for name in ("silent-agent", "silent"):
        monkeypatch.setitem(REFERENCE_AGENTS, name, FAULT_ENVS[name])
    monkeypatch.setenv("PREFECT_AGENTENV_HTTP_READ_TIMEOUT_SECONDS", "1")
    monkeypatch.setenv("PREFECT_AGENTENV_HTTP_CONNECT_TIMEOUT_SECONDS", "1")
    get_settings.cache_clear()
    data = tmp_path / "data.json"
    data.write_text(json.dumps({"notes": [{"id": "n1", "text": "hello"}]}))
    with get_artifact_store() as store:
        store.publish_environment("fault-data", "fault", "data.json", data)
    yield store_home
    get_settings.cache_clear()


def _assert_one_clean_line(report: TaskReport, step_id: str, *needles: str) -> str:
    """The failed step's error: one line naming what it must name; the run left nothing behind."""
    step = next(s for s in report.steps if s.id == step_id)
    error = str(step.error or "")
    assert step.state == "failed" and report.outcome.value == "FAILED", report.steps
    assert "\n" not in error and "Traceback" not in error, error
    for needle in needles:
        assert needle in error, (needle, error)
    assert (get_settings().runs_dir / report_run_id(report) / "report.json").is_file()
    assert wait_until_gone(report_run_id(report)) == []
    return error


def report_run_id(report: TaskReport) -> str:
    (folder,) = [p.parent.name for p in get_settings().runs_dir.glob("*/report.json")
                 if json.loads(p.read_text())["started_at"] == report.started_at]
    return folder


@pytest.mark.parametrize(("steps", "failing", "needles"), [
    pytest.param([SILENT_DATA, {"id": "load", "type": "load_artifact", "env_id": "silent-data",
                                "artifact_id": "fault-data"}],
                 "load", ["env 'silent-data'", "http://127.0.0.1:", "/agentenv", "in time"], id="env-data-plane"),
    pytest.param([{**SILENT_AGENT, "system_prompt": "Be brief."}],
                 "agent", ["agent 'a'", "http://127.0.0.1:", "agent-config", "in time"], id="agent-deploy-extension"),
    pytest.param([SILENT_AGENT, {"id": "ask", "type": "prompt_agent", "agent_name": "a", "prompt": "hi",
                                 "timeout_seconds": 2}],
                 "ask", ["agent 'a'", "http://127.0.0.1:", "within 2s"], id="agent-prompt"),
    pytest.param([{"id": "env", "type": "deploy_env", "env_id": "silent", "startup_timeout_seconds": 2}],
                 "env", ["'silent'", "http://127.0.0.1:", "within 2s"], id="env-card"),
    pytest.param([{"id": "agent", "type": "deploy_agent", "a2a_agent_id": "silent", "agent_name": "a",
                   "startup_timeout_seconds": 2}],
                 "agent", ["'a'", "http://127.0.0.1:", "within 2s"], id="agent-card"),
])
async def test_a_silent_peer_fails_its_step_within_the_timeout(
        silent_peers: Path, steps: list[dict[str, object]], failing: str, needles: list[str]) -> None:
    started = time.monotonic()
    report = await run_doc(steps, task_id="silent")
    took = time.monotonic() - started
    _assert_one_clean_line(report, failing, *needles)
    assert took < 15, took  # the peer starts in ~1 s; then 1-2 s of timeout, not 30-60 s


async def test_a_silent_mcp_endpoint_and_data_plane_fail_their_probes_within_the_timeout(silent_peers: Path) -> None:
    started = time.monotonic()
    report = await run_doc([SILENT_DATA, {"id": "probe", "type": "verify_env_card", "env_id": "silent-data"}])
    assert time.monotonic() - started < 15  # was 40 s: the MCP probe waited 30 s, the SDK's discover 10 s
    rows = {r.id: r.model_dump() for r in report.context.metadata.verifications["probe"].results}
    assert rows["data/get"]["status"] == "failed" and "/agentenv did not answer" in rows["data/get"]["justification"]
    assert rows["mcp tools"]["status"] == "failed" and "/mcp did not answer" in rows["mcp tools"]["justification"]
