"""A cgroup of its own per confined agent: its processes and its memory bounded as a whole.

The rlimits ``prlimit`` sets inside the sandbox are per process, and the kernel exempts root from
the process count. Where the runner may make cgroups (root, or a delegated cgroup v2 subtree), each
confined agent gets one, under the runner's own cgroup of each controller (so a limit the runner
itself is under still holds), named ``agentenv-<agent instance>``:

* ``pids.max`` = its ``process_limit``: processes and threads at once, every one it starts, for
  root too (bwrap's own included);
* its memory (v1 ``memory.limit_in_bytes`` and ``memory.memsw.limit_in_bytes``, v2 ``memory.max``
  and ``memory.swap.max`` 0) = its ``memory_limit_mb``, for all its processes together; over it,
  the kernel's OOM killer kills one of them.

**Joining without a race.** The agent's argv starts with :func:`join_argv`: a ``/bin/sh`` run by the
runner's user, outside any namespace, writes its own pid into the cgroup's ``cgroup.procs`` and
then ``exec``\\ s bwrap. Nothing of the agent runs before that write (bwrap is that very process,
after it), and every process bwrap starts is born in the cgroup. A failed write stops the start
(the shell exits 1 before bwrap runs). The cgroup namespace bwrap gives the agent is rooted there.

Cgroup v1 (a mount per controller, ``pids`` and ``memory`` both needed) or v2 (one unified
hierarchy whose cgroup offers both, read from its own files; they are enabled in the runner's
``cgroup.subtree_control`` when they are not, which the kernel refuses while that cgroup holds
processes itself, as a systemd session's does: a delegated subtree is needed there) is found once
from ``/proc/self/mountinfo`` and ``/proc/self/cgroup``. Where neither works (not root, read-only, a
v2 cgroup that cannot hand its controllers down), :func:`create` returns None and the agent has its
rlimits only, as before (a debug line says why).

:meth:`Cgroup.remove` (the launcher's release, when the agent stops) kills what is left in it and
removes it; :func:`sweep` removes the cgroups of a dead run's agents, as the bridges' folders are.
CPU time stays a per-process rlimit (no quota here).
"""

from __future__ import annotations

import functools
import logging
import os
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

logger = logging.getLogger("prefect_agentenv.runtime.confinement.cgroups")

PREFIX = "agentenv-"
"""A confined agent's cgroup is ``agentenv-<agent instance>`` under the runner's own."""
CONTROLLERS = ("pids", "memory")
_REMOVE_SECONDS = 2.0


@dataclass(frozen=True)
class Hierarchy:
    """Where this process may make cgroups: its own cgroup of each controller."""

    version: Literal["v1", "v2"]
    bases: dict[str, Path]
    """Controller → the folder of this process's cgroup (v2: the same folder for both)."""


@dataclass(frozen=True)
class Hits:
    """What the kernel refused or killed in an agent's cgroup."""

    oom_kills: int = 0
    """Processes the memory limit's OOM killer killed."""
    refused_forks: int = 0
    """Forks ``pids.max`` refused."""


@dataclass
class Cgroup:
    """One agent's cgroup: one folder per controller (v1) or one folder (v2)."""

    version: Literal["v1", "v2"]
    folders: dict[str, Path]
    """Controller → this cgroup's folder."""

    @property
    def procs_files(self) -> list[Path]:
        """The ``cgroup.procs`` files a process writes its pid into to join (one per distinct folder)."""
        return [folder / "cgroup.procs" for folder in dict.fromkeys(self.folders.values())]

    def hits(self) -> Hits:
        """The OOM kills and refused forks counted so far (0 when a counter cannot be read)."""
        memory, pids = self.folders["memory"], self.folders["pids"]
        oom = _counter(memory / ("memory.oom_control" if self.version == "v1" else "memory.events"), "oom_kill")
        return Hits(oom_kills=oom, refused_forks=_counter(pids / "pids.events", "max"))

    def remove(self) -> None:
        """Kill what is left in it (by pid; v2: ``cgroup.kill``) and remove it; bounded in time, never raises."""
        deadline = time.monotonic() + _REMOVE_SECONDS
        for folder in dict.fromkeys(self.folders.values()):
            _empty_and_remove(folder, deadline)


def _counter(path: Path, key: str) -> int:
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key and value.strip().isdigit():
                return int(value)
    except OSError:
        pass
    return 0


def _empty_and_remove(folder: Path, deadline: float) -> None:
    """SIGKILL the processes still in ``folder`` and rmdir it, retrying while they exit (EBUSY)."""
    if not folder.is_dir():
        return
    try:
        (folder / "cgroup.kill").write_text("1")
    except OSError:
        pass
    while True:
        for pid in _pids(folder):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            folder.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if time.monotonic() > deadline:
                logger.warning("cannot remove the agent's cgroup %s: %s", folder, exc)
                return
        time.sleep(0.002)


def _pids(folder: Path) -> list[int]:
    try:
        return [int(line) for line in (folder / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def create(instance_id: str, *, processes: int, memory_mb: int) -> Cgroup | None:
    """The agent's cgroup, made with its limits; None where cgroups cannot be made here (debug line)."""
    hierarchy = find_hierarchy()
    if hierarchy is None:
        return None
    cgroup = Cgroup(hierarchy.version, {c: base / f"{PREFIX}{instance_id}" for c, base in hierarchy.bases.items()})
    try:
        for folder in dict.fromkeys(cgroup.folders.values()):
            folder.mkdir()
        _write_limits(cgroup, processes=processes, memory_mb=memory_mb)
    except OSError as exc:
        logger.debug("no cgroup for %s (%s): rlimits only", instance_id, exc)
        cgroup.remove()
        return None
    return cgroup


def _write_limits(cgroup: Cgroup, *, processes: int, memory_mb: int) -> None:
    memory, size = cgroup.folders["memory"], str(memory_mb * 1024 * 1024)
    (cgroup.folders["pids"] / "pids.max").write_text(str(processes))
    if cgroup.version == "v1":
        (memory / "memory.limit_in_bytes").write_text(size)
        if (memory / "memory.memsw.limit_in_bytes").exists():  # swap accounting on: no swapping past the limit
            (memory / "memory.memsw.limit_in_bytes").write_text(size)
    else:
        (memory / "memory.max").write_text(size)
        if (memory / "memory.swap.max").exists():
            (memory / "memory.swap.max").write_text("0")


def join_argv(cgroup: Cgroup) -> list[str]:
    """The argv prefix that puts the process into ``cgroup`` and then execs the rest (module docstring)."""
    files = cgroup.procs_files
    writes = " && ".join(f'echo $$ > "${index}"' for index in range(1, len(files) + 1))
    script = f'{writes} || exit 1; shift {len(files)}; exec "$@"'
    return ["/bin/sh", "-c", script, "agentenv-cgroup", *map(str, files)]


@functools.lru_cache(maxsize=1)
def find_hierarchy() -> Hierarchy | None:
    """This process's own cgroups of the ``pids`` and ``memory`` controllers, where it may make
    children (cached: seen once per process); None where it may not."""
    try:
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
        own = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    found = _v2(mounts, own) or _v1(mounts, own)
    if found is None:
        logger.debug("no writable cgroup with the pids and memory controllers: confined agents get rlimits only")
    return found


def _own_paths(own: Iterable[str]) -> dict[str, str]:
    """``/proc/self/cgroup`` as controller → path (``""`` for the v2 line)."""
    paths: dict[str, str] = {}
    for line in own:
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            paths[controller] = path
    return paths


def _mounts(lines: Iterable[str]) -> list[tuple[str, Path, str, set[str]]]:
    """Cgroup mounts as (type, mount point, root of the mount, super options)."""
    found = []
    for line in lines:
        before, _, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
            found.append((tail[0], Path(fields[4]), fields[3], set(tail[2].split(","))))
    return found


def _v2(mounts: list[str], own: list[str]) -> Hierarchy | None:
    """The unified hierarchy, when this process's cgroup there offers both controllers and hands them down."""
    path = _own_paths(own).get("")
    for kind, point, root, _ in _mounts(mounts):
        if kind != "cgroup2" or path is None or not (base := _under_mount(point, root, path)):
            continue
        try:
            if not set(CONTROLLERS) <= set((base / "cgroup.controllers").read_text().split()):
                continue
            enabled = set((base / "cgroup.subtree_control").read_text().split())
            if not set(CONTROLLERS) <= enabled:
                (base / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in CONTROLLERS))
        except OSError:
            continue  # a cgroup with processes of its own cannot hand controllers down: not here
        if os.access(base, os.W_OK):
            return Hierarchy("v2", {c: base for c in CONTROLLERS})
    return None


def _v1(mounts: list[str], own: list[str]) -> Hierarchy | None:
    """A v1 mount of each controller, with this process's cgroup in it writable."""
    paths, bases = _own_paths(own), {}
    for controller in CONTROLLERS:
        for kind, point, root, options in _mounts(mounts):
            if kind == "cgroup" and controller in options and controller in paths:
                base = _under_mount(point, root, paths[controller])
                if base is not None and os.access(base, os.W_OK):
                    bases[controller] = base
                    break
    return Hierarchy("v1", bases) if set(bases) == set(CONTROLLERS) else None


def _under_mount(point: Path, root: str, path: str) -> Path | None:
    """The folder of cgroup ``path`` in a mount of the hierarchy's ``root`` at ``point``; None outside it."""
    relative = os.path.relpath(path, root)
    if relative.startswith(".."):
        return None
    folder = point / relative if relative != "." else point
    return folder if folder.is_dir() else None


def sweep(instances: Iterable[str]) -> int:
    """Remove the cgroups of these agent instances (a dead run's), wherever under the hierarchy they are
    (the run that made them may have been in another cgroup); the number removed."""
    names = {f"{PREFIX}{instance}" for instance in instances}
    hierarchy = find_hierarchy()
    if not names or hierarchy is None:
        return 0
    points = {point for kind, point, _, options in _mounts(Path("/proc/self/mountinfo").read_text().splitlines())
              if (kind == "cgroup2" and hierarchy.version == "v2") or (kind == "cgroup" and options & set(CONTROLLERS))}
    deadline, removed = time.monotonic() + _REMOVE_SECONDS, 0
    for point in points:
        for folder, children, _ in os.walk(point):
            for child in [c for c in children if c in names]:
                _empty_and_remove(Path(folder) / child, deadline)
                removed += 1
            children[:] = [c for c in children if c not in names]
    return removed
