"""What a run killed with SIGKILL (or by the OOM killer, or a power cut) left behind, swept at the
next start.

Each run writes ``owner.json`` (pid, host, process start time, flow run id) into its folder and
``report.json`` when it ends. A folder with an owner whose process is gone and no report is a
dead run: its processes (found by the ``PREFECT_AGENTENV_RUN_ID`` marker every child carries in
its environment) are killed, its sandboxes removed (unless it kept them), so are its confined
agents' network-bridge folders in the temporary folder and their cgroups (``runtime/confinement/cgroups.py``),
and the folder gets a ``swept.json`` saying so. Marking its flow run Crashed is the flow layer's part.
"""

from __future__ import annotations

import glob
import json
import logging
import os
import shutil
import signal
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path

from prefect_agentenv.runtime.confinement import cgroups

logger = logging.getLogger("prefect_agentenv.sweep")

RUN_MARKER = "PREFECT_AGENTENV_RUN_ID"
"""Environment variable naming the run in every process the run starts (envs, agents, scripts)."""
OWNER_FILE = "owner.json"
SWEPT_FILE = "swept.json"


@dataclass(frozen=True)
class DeadRun:
    """A run folder whose process died without finishing."""

    run_id: str
    folder: Path
    flow_run_id: str | None
    killed: tuple[int, ...]
    sandboxes_removed: bool


def write_owner(workdir: Path, *, run_id: str, flow_run_id: str | None, keep: bool = False) -> None:
    """Record which process owns the run folder (read by :func:`sweep_dead_runs`)."""
    owner = {"run_id": run_id, "pid": os.getpid(), "host": socket.gethostname(),
             "start_ticks": _start_ticks(os.getpid()), "flow_run_id": flow_run_id, "keep": keep}
    # Written whole and renamed into place: a sweep or a watcher never reads half a record.
    partial = workdir / f".{OWNER_FILE}.partial"
    partial.write_text(json.dumps(owner), encoding="utf-8")
    partial.replace(workdir / OWNER_FILE)


def sweep_dead_runs(runs_dir: Path) -> list[DeadRun]:
    """Kill what dead runs of this host left running and remove their sandboxes."""
    if not runs_dir.is_dir():
        return []
    dead = [(folder, owner) for folder in runs_dir.iterdir() if (owner := _dead_owner(folder)) is not None]
    if not dead:
        return []
    by_run = _marked_processes({str(owner["run_id"]) for _, owner in dead})
    swept: list[DeadRun] = []
    for folder, owner in dead:
        run_id = str(owner["run_id"])
        killed = tuple(pid for pid in by_run.get(run_id, []) if _kill(pid))
        removed = False
        if not owner.get("keep") and (folder / "sandboxes").is_dir():
            shutil.rmtree(folder / "sandboxes", ignore_errors=True)
            removed = True
        _remove_agent_leftovers(folder)
        flow_run_id = owner.get("flow_run_id")
        record = DeadRun(run_id, folder, flow_run_id if isinstance(flow_run_id, str) else None, killed, removed)
        (folder / SWEPT_FILE).write_text(json.dumps({"killed": list(killed), "sandboxes_removed": removed,
                                                     "flow_run_id": record.flow_run_id}), encoding="utf-8")
        logger.warning("run %s was killed without tearing down: stopped %d process(es) it left%s", run_id,
                       len(killed), ", removed its sandboxes" if removed else "")
        swept.append(record)
    return swept


def _remove_agent_leftovers(folder: Path) -> None:
    """Remove the network-bridge folders (``agentenv-net-<instance>-…`` in the temporary folder) and the
    cgroups (``agentenv-<instance>``) of the run's confined agents, named after the agent instances whose
    logs are in the run's ``agents``."""
    temp = Path(tempfile.gettempdir())
    instances = [log.name.removesuffix(".stdout.log") for log in (folder / "agents").rglob("*.stdout.log")]
    for instance in instances:
        for bridge in temp.glob(f"agentenv-net-{glob.escape(instance)}-*"):
            shutil.rmtree(bridge, ignore_errors=True)
    cgroups.sweep(instances)


def _dead_owner(folder: Path) -> dict[str, object] | None:
    if (folder / "report.json").exists() or (folder / SWEPT_FILE).exists():
        return None
    try:
        owner = json.loads((folder / OWNER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(owner, dict) or owner.get("host") != socket.gethostname() or "run_id" not in owner:
        return None
    pid = owner.get("pid")
    if isinstance(pid, int) and _alive(pid, owner.get("start_ticks")):
        return None
    return owner


def _alive(pid: int, start_ticks: object) -> bool:
    """Whether ``pid`` is still the process that wrote the owner file (not a reuse of its id)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return start_ticks is None or _start_ticks(pid) == start_ticks


def _start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (Linux), to tell a reused pid apart."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def _marked_processes(run_ids: set[str]) -> dict[str, list[int]]:
    """Processes of this user whose environment names one of ``run_ids`` (Linux ``/proc``)."""
    found: dict[str, list[int]] = {}
    proc = Path("/proc")
    if not proc.is_dir():
        return found
    needle = RUN_MARKER.encode() + b"="
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        for item in environ.split(b"\0"):
            if item.startswith(needle):
                run_id = item[len(needle):].decode(errors="replace")
                if run_id in run_ids:
                    found.setdefault(run_id, []).append(int(entry.name))
                break
    return found


def _kill(pid: int) -> bool:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return False
    return True
