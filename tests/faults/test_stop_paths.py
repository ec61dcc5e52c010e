"""Every way a CLI run can stop: exit code, one line, the report, nothing left running, no sandbox left.

The run deploys an env started through ``sh -c`` that forks a helper (a grandchild of the run),
an agent (with its sandbox) and a verify script that starts a child of its own and hangs; the
run is then stopped while all of them are up. Leftovers are found by the run marker that every
process the run starts carries in its environment.
"""

from __future__ import annotations

import json
import os
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .harness import CliRun, flow_run_states, marked_processes, start_cli, wait_until_gone
from .helpers import publish_script

SPAWNER = """
import asyncio, subprocess, sys
async def verify(mcp_url):
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    await asyncio.sleep(600)
"""
TASK = [
    {"id": "env", "type": "deploy_env", "env_id": "wrapped", "depends_on": []},
    {"id": "agent", "type": "deploy_agent", "a2a_agent_id": "scripted", "agent_name": "a", "depends_on": []},
    {"id": "check", "type": "env_outcome_verifier", "env_id": "wrapped", "verifier_id": "v",
     "script_artifact_id": "spawner", "depends_on": ["env", "agent"]},
]


@pytest.fixture
def task_file(agentenv_home: Path, tmp_path: Path) -> Path:
    publish_script("spawner", SPAWNER)
    path = tmp_path / "stop-me.json"
    path.write_text(json.dumps(TASK))
    return path


@pytest.fixture
def cli(task_file: Path, agentenv_home: Path, api_url: str, tmp_path: Path) -> Iterator[CliRun]:
    run = start_cli(["run", str(task_file)], home=agentenv_home, api_url=api_url, report=tmp_path / "out" / "r.json")
    yield run
    if run.process.poll() is None:
        os.killpg(run.process.pid, signal.SIGKILL)
        run.process.wait()


def _everything_up(cli: CliRun) -> str:
    """Wait until the verify script (and so the env and the agent) runs; return the run id."""
    run_id = str(cli.owner()["run_id"])
    cli.wait_for_step("*/verifiers/check/verify.py")
    deadline = time.monotonic() + 30
    while len(marked_processes(run_id)) < 8 and time.monotonic() < deadline:
        time.sleep(0.1)  # supervisors, sh, the env, its helper, the agent, the script and its child
    assert len(marked_processes(run_id)) >= 8
    return run_id


def _bridges(run_folder: Path) -> list[Path]:
    """The network-bridge folders of the run's confined agents (named after their instances)."""
    instances = [log.name.removesuffix(".stdout.log") for log in (run_folder / "agents").rglob("*.stdout.log")]
    return [bridge for instance in instances
            for bridge in Path(tempfile.gettempdir()).glob(f"agentenv-net-{instance}-*")]


def _cgroups(run_folder: Path) -> list[Path]:
    """The cgroups of the run's confined agents still on disk (none where this machine makes none)."""
    from prefect_agentenv.runtime.confinement.cgroups import PREFIX, find_hierarchy

    hierarchy = find_hierarchy()
    bases = set(hierarchy.bases.values()) if hierarchy is not None else set()
    instances = [log.name.removesuffix(".stdout.log") for log in (run_folder / "agents").rglob("*.stdout.log")]
    return [base / f"{PREFIX}{instance}" for base in bases for instance in instances
            if (base / f"{PREFIX}{instance}").exists()]


def _assert_clean(cli: CliRun, run_id: str) -> None:
    assert wait_until_gone(run_id) == []
    assert not list((cli.home / "runs" / run_id).glob("sandboxes/*"))


@pytest.mark.parametrize(("sig", "code", "reason"), [(signal.SIGINT, 130, "SIGINT"), (signal.SIGTERM, 143, "SIGTERM")])
def test_a_signal_stops_the_run_in_order(cli: CliRun, sig: signal.Signals, code: int, reason: str) -> None:
    run_id = _everything_up(cli)
    cli.process.send_signal(sig)
    returncode, _, err = cli.finish()
    assert returncode == code, err
    assert "Traceback" not in err, err
    assert [line for line in err.splitlines() if "torn down" in line]
    report = json.loads(cli.report.read_text())
    assert report["stop_reason"] == reason and report["status"] == "failed" and report["outcome"] == "FAILED"
    assert {s["id"]: s["state"] for s in report["steps"]}["check"] == "cancelled"
    _assert_clean(cli, run_id)


def test_a_prefect_cancellation_stops_a_cli_run_and_ends_it_cancelled(cli: CliRun, api_url: str) -> None:
    import httpx

    run_id = _everything_up(cli)
    flow_run_id = cli.owner()["flow_run_id"]
    response = httpx.post(f"{api_url}/flow_runs/{flow_run_id}/set_state",
                          json={"state": {"type": "CANCELLING", "name": "Cancelling"}, "force": True}, timeout=30)
    response.raise_for_status()
    returncode, _, err = cli.finish()
    assert returncode == 3, err
    assert "Traceback" not in err, err
    report = json.loads(cli.report.read_text())
    assert report["stop_reason"] == "cancelled"
    states = flow_run_states(api_url, flow_run_id)
    assert states[-1] == "CANCELLED" and "CRASHED" not in states
    _assert_clean(cli, run_id)


def test_sigkill_leaves_nothing_running_and_the_next_start_sweeps_the_rest(
        cli: CliRun, task_file: Path, agentenv_home: Path, api_url: str, tmp_path: Path) -> None:
    run_id = _everything_up(cli)
    flow_run_id = cli.owner()["flow_run_id"]
    assert list((agentenv_home / "runs" / run_id).glob("sandboxes/*"))
    bridges = _bridges(agentenv_home / "runs" / run_id)
    cgroups = _cgroups(agentenv_home / "runs" / run_id)
    cli.process.send_signal(signal.SIGKILL)
    cli.finish()
    assert wait_until_gone(run_id) == []
    assert bridges and all(bridge.exists() for bridge in bridges), "its confined agent's bridge outlived the kill"
    from prefect_agentenv.runtime.confinement.cgroups import find_hierarchy

    assert all(cgroup.exists() for cgroup in cgroups), "so did its cgroup"
    assert cgroups or find_hierarchy() is None, "(where this machine makes them)"
    assert flow_run_states(api_url, flow_run_id)[-1] == "RUNNING"

    quick = tmp_path / "quick.json"
    quick.write_text(json.dumps([{"id": "n", "type": "test_noop"}]))
    nxt = start_cli(["run", str(quick)], home=agentenv_home, api_url=api_url, report=tmp_path / "next.json")
    returncode, _, err = nxt.finish()
    assert returncode == 0, err
    assert not list((agentenv_home / "runs" / run_id).glob("sandboxes/*"))
    assert not any(bridge.exists() for bridge in bridges), "the next start removed the dead run's bridge folders"
    assert _cgroups(agentenv_home / "runs" / run_id) == [], "and its agents' cgroups"
    assert flow_run_states(api_url, flow_run_id)[-1] == "CRASHED"
