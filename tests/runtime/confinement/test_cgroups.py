"""A cgroup per confined agent (``runtime/confinement/cgroups.py``): its processes and its memory bounded as a whole,
for root too, the limit named when it stops the agent, and the cgroup gone when the agent is.

Real agents and commands under the confined launcher, on a machine where the runner may make cgroups
(root here, as CI runs); elsewhere the agent keeps its rlimits only and these tests are skipped.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from prefect_agentenv.agents.catalog import REFERENCE_AGENTS
from prefect_agentenv.exceptions import DeployError, InstanceExitedError, ResourceLimitError
from prefect_agentenv.runtime.confinement import cgroups
from prefect_agentenv.runtime.confinement.confined import ConfinedLauncher
from prefect_agentenv.runtime.launch.base import LaunchSpec
from prefect_agentenv.runtime.resources.leftovers import OWNER_FILE, sweep_dead_runs
from prefect_agentenv.runtime.resources.sandbox import Sandbox, create_sandbox

pytestmark = pytest.mark.skipif(cgroups.find_hierarchy() is None, reason="no cgroups can be made here")

CARD = "/.well-known/agent-card.json"
HOG = """
import os, sys, time
def hog():
    chunk = bytearray(120 << 20)          # under the per-process rlimit; three of them are over the agent's limit
    for i in range(0, len(chunk), 4096):
        chunk[i] = 1
    time.sleep(2)
kids = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        hog()
        os._exit(0)
    kids.append(pid)
codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in kids]
print("children exited with", codes, file=sys.stderr)
sys.exit(1 if any(codes) else 0)
"""
SERVE_THEN_HOG = """
import http.server, os, subprocess, sys, threading
def hog_then_exit():
    os._exit(subprocess.call([sys.executable, "-c", sys.argv[2]]))
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"{}")
        if self.path == "/hog":
            threading.Thread(target=hog_then_exit).start()
    def log_message(self, *args): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""


def cgroup_folders(instance_id: str) -> list[Path]:
    """The agent's cgroup folders still on disk."""
    hierarchy = cgroups.find_hierarchy()
    assert hierarchy is not None
    return [base / f"{cgroups.PREFIX}{instance_id}" for base in set(hierarchy.bases.values())
            if (base / f"{cgroups.PREFIX}{instance_id}").exists()]


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return create_sandbox(tmp_path / "run", "agent")


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10.0, trust_env=False) as client:
        yield client


def started_instances(folder: Path) -> list[str]:
    return [log.name.removesuffix(".stdout.log") for log in folder.rglob("*.stdout.log")]


async def test_an_agent_runs_in_a_cgroup_of_its_own_with_its_limits_and_it_is_gone_after_stop(
        sandbox: Sandbox, tmp_path: Path, http: httpx.AsyncClient) -> None:
    launcher = ConfinedLauncher(run_id="r1", http_client=http)
    spec = LaunchSpec(command=REFERENCE_AGENTS["scripted"].command(), ready_path=CARD, kind="confined",
                      memory_limit_mb=2048, process_limit=64)
    instance = await launcher.start(spec, name="agent", workdir=tmp_path, cwd=sandbox.root, extra_env=sandbox.env())
    try:
        folders = cgroup_folders(instance.instance_id)
        assert folders, "the agent's cgroup exists while it runs"
        cgroup = launcher._cgroups[instance.instance_id]
        assert (cgroup.folders["pids"] / "pids.max").read_text().strip() == "64"
        memory = cgroup.folders["memory"]
        limit = memory / ("memory.limit_in_bytes" if cgroup.version == "v1" else "memory.max")
        assert int(limit.read_text()) == 2048 << 20
        inside = [int(pid) for pid in (cgroup.folders["pids"] / "cgroup.procs").read_text().split()]
        assert len(inside) >= 3, "bwrap, the namespace's init and the agent are all in it"
        assert instance.pid not in inside, "the runner's supervisor is not"
        record = instance.confinement
        assert record is not None and record.cgroup == cgroup.version
        assert record.limits == {"memory_mb": 2048, "processes": 64, "cpu_seconds": 7200, "disk_mb": 10240}, (
            "the process count is recorded: the cgroup enforces it, for root too")
    finally:
        await launcher.stop(instance)
    assert cgroup_folders(instance.instance_id) == [], "stopping the agent removed its cgroup"


async def test_a_fork_bomb_is_refused_past_the_process_limit_as_root_and_the_failure_names_it(
        sandbox: Sandbox, tmp_path: Path) -> None:
    spec = LaunchSpec(command=["/bin/sh", "-c", "for i in $(seq 100); do sleep 5 & done; wait"], kind="confined",
                      process_limit=20, startup_timeout_seconds=20)

    with pytest.raises(DeployError) as raised:
        await ConfinedLauncher(run_id="r1").start(spec, name="bomb", workdir=tmp_path, cwd=sandbox.root,
                                                  extra_env=sandbox.env())
    message = str(raised.value)
    assert isinstance(raised.value, ResourceLimitError) and raised.value.limit == "process limit (process_limit=20)"
    assert os.getuid() != 0 or "Cannot fork" in message, "as root too, forks past the limit are refused"
    assert "'bomb' exited before it was ready: exit code 2, stopped by its process limit (process_limit=20)" in message
    assert all(cgroup_folders(instance) == [] for instance in started_instances(tmp_path)), (
        "the failed start removed its cgroup, the sleeps it left with it")


async def test_an_agent_whose_processes_together_pass_its_memory_limit_is_killed_and_the_limit_named(
        sandbox: Sandbox, tmp_path: Path) -> None:
    spec = LaunchSpec(command=[sys.executable, "-c", HOG], kind="confined", memory_limit_mb=256,
                      startup_timeout_seconds=30)

    with pytest.raises(DeployError) as raised:
        await ConfinedLauncher(run_id="r1").start(spec, name="hog", workdir=tmp_path, cwd=sandbox.root,
                                                  extra_env=sandbox.env())
    message = str(raised.value)
    assert "-9" in message, f"the OOM killer killed a child: {message}"
    assert "'hog' exited before it was ready: exit code 1, stopped by its memory limit (memory_limit_mb=256)" in message
    assert all(cgroup_folders(instance) == [] for instance in started_instances(tmp_path))


async def test_an_agent_killed_by_its_memory_limit_during_the_run_is_named_at_stop(
        sandbox: Sandbox, tmp_path: Path, http: httpx.AsyncClient) -> None:
    launcher = ConfinedLauncher(run_id="r1", http_client=http)
    spec = LaunchSpec(command=[sys.executable, "-c", SERVE_THEN_HOG, "{port}", HOG], kind="confined",
                      ready_path="/", memory_limit_mb=256)
    instance = await launcher.start(spec, name="server", workdir=tmp_path, cwd=sandbox.root, extra_env=sandbox.env())
    stopped: InstanceExitedError | None = None
    try:
        await http.get(f"{instance.base_url}/hog")
        deadline = time.monotonic() + 30
        while not _exited(instance.pid):
            assert time.monotonic() < deadline, "the server did not exit"
            time.sleep(0.05)
    finally:
        try:
            await launcher.stop(instance)
        except InstanceExitedError as exc:
            stopped = exc
    assert stopped is not None and "exited on its own during the run with exit code 1, stopped by its memory " \
        "limit (memory_limit_mb=256)" in str(stopped)
    assert stopped.limit == "memory limit (memory_limit_mb=256)", "the teardown's record and the failure's cause carry it"
    assert cgroup_folders(instance.instance_id) == []


def _exited(pid: int | None) -> bool:
    assert pid is not None
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None and info.si_pid != 0


def test_the_next_start_removes_the_cgroups_a_dead_run_s_agents_left(tmp_path: Path) -> None:
    run_folder = tmp_path / "runs" / "dead"
    (run_folder / "agents" / "logs").mkdir(parents=True)
    instance = f"agent-{uuid.uuid4().hex[:10]}"
    (run_folder / "agents" / "logs" / f"{instance}.stdout.log").write_text("")
    gone = subprocess.Popen(["/bin/true"])
    gone.wait()
    (run_folder / OWNER_FILE).write_text(json.dumps({"run_id": "dead", "pid": gone.pid, "host": socket.gethostname()}))
    cgroup = cgroups.create(instance, processes=10, memory_mb=64)
    assert cgroup is not None
    left = subprocess.Popen(["/bin/sh", "-c", " && ".join(f'echo $$ > "{f}"' for f in cgroup.procs_files)
                             + " && exec sleep 60"])
    try:
        deadline = time.monotonic() + 5
        while not cgroup.folders["pids"].joinpath("cgroup.procs").read_text().split():
            assert time.monotonic() < deadline
            time.sleep(0.01)

        swept = sweep_dead_runs(tmp_path / "runs")

        assert [run.run_id for run in swept] == ["dead"]
        assert cgroup_folders(instance) == [], "its cgroup is gone, and the process left in it was killed"
        assert left.wait(timeout=5) == -9
    finally:
        left.kill()
        left.wait()
        cgroup.remove()
