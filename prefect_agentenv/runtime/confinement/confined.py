"""The confined launcher: the process launcher's server, started under bubblewrap (kind ``confined``).

An agent under evaluation is untrusted (docs/security.md; docs/architecture.md, "Trust boundaries").
Started here, it sees:

* **files**: its sandbox's top folders at the root (``<sandbox>/app`` at ``/app``, its working
  folder; ``<sandbox>/tmp`` at ``/tmp``; ``<sandbox>/home`` at ``/home``, its ``HOME``), so the
  sandbox paths documents use are real paths, and the whole sandbox at ``/sandbox`` (its
  ``$AGENTENV_SANDBOX_ROOT``); the system and what its command needs (found from the command line by
  ``sight``/``command_needs``: its executables' ``#!`` chains, venvs and base Pythons, the paths it names),
  and ``install_paths``, read-only; nothing else of the host (the disk its sandbox takes is watched:
  ``disk``);
* **environment**: only what the launch declares (the spec's env and secrets, what the run gives
  it, its own HOME/TMPDIR/PATH/locale, the run marker the clean-up looks for); nothing of the
  runner's. bwrap's ``--clearenv``/``--setenv`` would put values, secrets included, on bwrap's
  command line, readable in ``/proc``: the process is given a complete environment instead;
* **processes**: its own PID namespace (the runner's pids do not exist there), no capabilities,
  killed with its parent; rlimits set by ``prlimit`` inside: memory (private writable memory per
  process), CPU time per process and, when the runner is not root, processes at once; where the
  runner may make cgroups, a cgroup of its own (``runtime/confinement/cgroups.py``) bounds its processes and its
  memory as a whole, for root too;
* **network**: a namespace of its own with only its loopback, bridged by ``runtime/confinement/netns.py`` to its
  doors (its model endpoint, its envs' MCP paths, what its block allows) and from the runner to its
  A2A port, on the same ``host:port`` numbers inside; ``network: public`` keeps the host's network.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import signal
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from prefect_agentenv.context import Confinement
from prefect_agentenv.exceptions import DeployError
from prefect_agentenv.runtime.confinement import cgroups
from prefect_agentenv.runtime.confinement.bwrap import (
    SYSTEM_DIRS,
    Bwrap,
    BwrapUnavailableError,
    Layout,
    bwrap_argv,
    check_network_namespace,
    working_bwrap,
)
from prefect_agentenv.runtime.confinement.cgroups import Cgroup, Hits
from prefect_agentenv.runtime.confinement.disk import DEFAULT_DISK_MB, DiskWatcher
from prefect_agentenv.runtime.confinement.netns import (
    FORWARDER,
    FORWARDER_INSIDE,
    INSIDE_FOLDER,
    Bridge,
    python_folders,
)
from prefect_agentenv.runtime.confinement.sight import sight
from prefect_agentenv.runtime.launch.base import (
    CONFINED_KIND,
    Door,
    LauncherKind,
    LaunchSpec,
    NetworkAllow,
    fill_template,
    tail,
)
from prefect_agentenv.runtime.launch.process import Command, ProcessLauncher, sandbox_folders_env
from prefect_agentenv.runtime.launch.tree import INSTANCE_MARKER
from prefect_agentenv.runtime.resources.leftovers import RUN_MARKER
from prefect_agentenv.runtime.resources.sandbox import HOME_FOLDER, SANDBOX_ROOT_VARIABLE
from prefect_agentenv.settings import get_settings

logger = logging.getLogger("prefect_agentenv.runtime.confinement.confined")

WORKSPACE = "/app"
"""The confined process's working folder: ``<sandbox>/app``, where AgentEnv's agents work."""
SANDBOX_MOUNT = "/sandbox"
"""Where the whole sandbox folder is mounted too: ``$AGENTENV_SANDBOX_ROOT``, under which sandbox paths map
(``/app/x`` and ``/sandbox/app/x`` are one file), so a relative sandbox path means what it means on the host."""
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DEFAULT_MEMORY_MB = 8192
DEFAULT_PROCESSES = 1024
DEFAULT_CPU_SECONDS = 7200
CPU_GRACE_SECONDS = 10
"""SIGXCPU first (the process may say why it stops), SIGKILL this much CPU time later."""
PRLIMIT = "/usr/bin/prlimit"
OPT_OUT_HINT = ("set confinement: none on its A2AAgent block, or PREFECT_AGENTENV_AGENT_CONFINEMENT=none for "
                "every agent, to run it unconfined (recorded as such)")
NETWORK_OPT_OUT_HINT = ("set network: public on its A2AAgent block, or PREFECT_AGENTENV_AGENT_NETWORK=public for "
                        f"every agent, to keep the host's network (recorded); or {OPT_OUT_HINT}")
_RESERVED_TOPS = frozenset({"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "proc", "dev", "sys"})
_MEMORY_SIGNS = re.compile(r"MemoryError|out of memory|Cannot allocate memory|ENOMEM|allocation failed", re.I)
_PROCESS_SIGNS = re.compile(r"Resource temporarily unavailable|EAGAIN|can't fork|fork failed", re.I)
_SIGXCPU_EXITS = frozenset({128 + 24, -24})
_SIGXFSZ_EXITS = frozenset({128 + 25, -25})
_DISK_SIGNS = re.compile(r"File too large|EFBIG", re.I)


class ConfinedLauncher(ProcessLauncher):
    """Starts servers as the process launcher does, each confined by bubblewrap in its sandbox.

    Args: as :class:`ProcessLauncher`'s.
    """

    kind: LauncherKind = CONFINED_KIND
    agent_cgroups: bool = True
    """Whether each agent gets a cgroup of its own where cgroups can be made (a subclass may say no: the
    confinement benchmark's baseline)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._bridges: dict[str, Bridge] = {}
        self._cgroups: dict[str, Cgroup] = {}
        self._disks: dict[str, DiskWatcher] = {}

    async def _prepare(self, spec: LaunchSpec, *, name: str, instance_id: str, port: int) -> None:
        """The agent's cgroup where cgroups can be made (``runtime/confinement/cgroups.py``), and the network bridge of an
        agent whose network is confined: its A2A port taken on the host, its first doors open (docs/security.md,
        "The network")."""
        cgroup = cgroups.create(instance_id, processes=spec.process_limit or DEFAULT_PROCESSES,
                                memory_mb=spec.memory_limit_mb or DEFAULT_MEMORY_MB) if self.agent_cgroups else None
        if cgroup is not None:
            self._cgroups[instance_id] = cgroup
        if network_of(spec) == "public":
            return
        bwrap = _bwrap(name)
        try:
            check_network_namespace(bwrap.path)
        except BwrapUnavailableError as exc:
            raise DeployError(f"{name!r} cannot run confined: {exc}; {NETWORK_OPT_OUT_HINT}") from None
        bridge = self._bridges[instance_id] = Bridge(instance_id, host=self.host, port=port)
        await bridge.listen(network_doors(spec))

    def _release(self, instance_id: str) -> None:
        bridge = self._bridges.pop(instance_id, None)
        if bridge is not None:
            bridge.close()
        cgroup = self._cgroups.pop(instance_id, None)
        if cgroup is not None:
            cgroup.remove()
        disk = self._disks.pop(instance_id, None)
        if disk is not None:
            disk.stop()

    def _started(self, spec: LaunchSpec, *, instance_id: str, pid: int, cwd: Path | None) -> None:
        """The watcher of the disk its sandbox takes: past ``disk_limit_mb``, the agent's whole process group goes."""
        if cwd is None:
            return
        watcher = DiskWatcher(Path(cwd), limit_mb=spec.disk_limit_mb or DEFAULT_DISK_MB,
                              exceeded=functools.partial(_kill_group, pid))
        self._disks[instance_id] = watcher
        watcher.start()

    def _command(self, spec: LaunchSpec, *, name: str, port: int, cwd: Path | None,
                 extra_env: dict[str, str] | None, instance_id: str) -> Command:
        """The bwrap argv around the spec's command, and the process's whole environment."""
        if cwd is None:
            raise DeployError(f"{name!r}: the confined launcher starts a server in a sandbox folder, and none was given")
        bwrap = _bwrap(name)
        root = Path(cwd).resolve()
        declared = {k: fill_template(v, host=self.host, port=port) for k, v in spec.env.items()}
        declared.update(spec.secret_values())
        declared.update(extra_env or {})
        declared.update(sandbox_folders_env(spec, root))
        argv = [fill_template(part, host=self.host, port=port) for part in spec.command or []]
        seen = sight(name, argv, install_paths=spec.install_paths, root=root, hint=OPT_OUT_HINT,
                     path=declared.get("PATH", os.environ.get("PATH", os.defpath)))
        writable = sandbox_mounts(root)
        env = confined_env(declared, root=root, visible=[*seen.read_only, *seen.path_first],
                           tops=[inside for _, inside in writable[1:]], first=seen.path_first)
        env[RUN_MARKER] = self.run_id or ""
        if spec.follow_tree:
            env[INSTANCE_MARKER] = instance_id
        cgroup = self._cgroups.get(instance_id)
        limits = enforced_limits(spec, cgroup=cgroup is not None)
        inner = [*_prlimit_argv(spec, cgroup=cgroup is not None), seen.program, *argv[1:]]
        layout = Layout(writable=tuple((host, inside) for host, inside in writable), read_only=seen.read_only,
                        read_only_at=(*seen.aliases, *((Path(host), inside) for host, inside in spec.overlays)),
                        chdir=WORKSPACE, share_net=network_of(spec) == "public")
        bridge = self._bridges.get(instance_id)
        if bridge is not None:
            inner = [*bridge.forwarder_argv(), *inner]
            layout = _bridged(layout, bridge)
        record = Confinement(mechanism=f"bwrap {bwrap.version}", network="public" if layout.share_net else "confined",
                             doors=bridge.labels if bridge is not None else [], limits=limits,
                             cgroup=cgroup.version if cgroup is not None else None, mounts=list(seen.mounts))
        joined = cgroups.join_argv(cgroup) if cgroup is not None else []
        return Command([*joined, *bwrap_argv(bwrap.path, layout, inner)], env, root, record)

    def _exit_reason(self, spec: LaunchSpec, code: int, stderr_path: Path | None,
                     instance_id: str | None = None) -> tuple[str, str | None]:
        """The exit code, and the limit that killed the process when its exit (or its cgroup's counters) says so."""
        cgroup = self._cgroups.get(instance_id) if instance_id is not None else None
        disk = self._disks.get(instance_id) if instance_id is not None else None
        limit = limit_hit(spec, code, tail(stderr_path), cgroup.hits() if cgroup is not None else None,
                          disk_hit=disk is not None and disk.hit)
        if limit is not None:
            return f"exit code {code}, stopped by its {limit}", limit
        # What its command line shows was mounted; a folder its code reads that no command line names was not.
        return (f"exit code {code} (confined: it sees its sandbox, the system and what its command line needs; "
                "`prefect-agentenv agent check NAME` lists what was mounted and why; a folder its code reads that "
                "its command does not name goes in install_paths: --install-path DIR)"), None


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _bwrap(name: str) -> Bwrap:
    try:
        return working_bwrap()
    except BwrapUnavailableError as exc:
        raise DeployError(f"{name!r} cannot run confined: {exc}; {OPT_OUT_HINT}") from None


def network_of(spec: LaunchSpec) -> Literal["public"] | NetworkAllow | None:
    """The agent's network: its widening (its block's and its task's), else the setting's (``public``), else its own
    (None)."""
    if spec.network is not None:
        return spec.network
    return "public" if get_settings().agent_network == "public" else None


def network_doors(spec: LaunchSpec) -> tuple[Door, ...]:
    """The doors a confined network opens at start: the run's (its model endpoint), then what the block allows."""
    network = network_of(spec)
    allowed = tuple(Door.parse(entry) for entry in network.allow) if isinstance(network, NetworkAllow) else ()
    return (*spec.doors, *allowed)


def _bridged(layout: Layout, bridge: Bridge) -> Layout:
    """The layout with the bridge's socket folder, the forwarder and the Python that runs it."""
    python = [folder for folder in python_folders() if not _under(folder, [*map(Path, SYSTEM_DIRS), *layout.read_only])]
    return replace(layout, writable=(*layout.writable, (bridge.folder, INSIDE_FOLDER)),
                   read_only=(*layout.read_only, *python),
                   read_only_at=(*layout.read_only_at, (FORWARDER, FORWARDER_INSIDE)))


def sandbox_mounts(root: Path) -> list[tuple[Path, str]]:
    """The sandbox at ``/sandbox``, then each of its top folders at the same name at the root
    (``<root>/app`` → ``/app``), so absolute sandbox paths are real; names the system uses are skipped
    (an agent cannot shadow /usr)."""
    (root / "app").mkdir(exist_ok=True)
    (root / HOME_FOLDER).mkdir(exist_ok=True)
    (root / "tmp").mkdir(exist_ok=True)
    mounts = [(root, SANDBOX_MOUNT)]
    for child in sorted(root.iterdir()):
        if child.is_dir() and not child.is_symlink() and child.name not in _RESERVED_TOPS:
            mounts.append((child, f"/{child.name}"))
    return mounts


def install_folders(program: str, *, install_paths: Sequence[str] = (), root: Path | None = None) -> list[Path]:
    """Host folders a Python's code lives in (grading's box mounts the runner's this way; an agent's come from
    :func:`~prefect_agentenv.runtime.confinement.sight.sight`): ``install_paths``, and for a command
    run by a Python of a venv the venv and its base Python (and this package, when it is the runner's
    own venv: an editable install lives outside it). System folders are visible anyway.

    Raises:
        DeployError: an install folder would show the sandbox ``root`` (or the run folder holding it).
    """
    found = [Path(p) for p in install_paths]
    executable = Path(program)
    venv = executable.parent.parent
    if (venv / "pyvenv.cfg").is_file():
        found += [venv, Path(os.path.realpath(executable)).parent.parent]
        if venv.resolve() == Path(sys.prefix).resolve():
            found.append(Path(__file__).resolve().parents[2])
    elif executable.is_absolute():
        found.append(executable.parent)
    folders: list[Path] = []
    for folder in sorted({Path(os.path.realpath(p)) for p in found}, key=lambda p: len(p.parts)):
        if root is not None and root.is_relative_to(folder):
            raise DeployError(f"install path {folder} holds the agent's own sandbox (and the run's folder): name the "
                              "server's own folder instead")
        if folder.is_dir() and not _under(folder, [*map(Path, SYSTEM_DIRS), *folders]):
            folders.append(folder)
    return folders


def _under(path: Path, folders: list[Path]) -> bool:
    return any(path.is_relative_to(folder) for folder in folders)


def confined_env(declared: dict[str, str], *, root: Path, visible: list[Path], tops: list[str],
                 first: Sequence[Path] = ()) -> dict[str, str]:
    """The process's whole environment: what the launch declares, its host sandbox paths rewritten to the
    paths inside (the sandbox root itself becomes the workspace), a PATH of what it can see (``first``: the
    folders of what its command names bare), its own HOME, TMPDIR and locale."""
    env = {"HOME": f"/{HOME_FOLDER}", "TMPDIR": "/tmp", "LANG": "C.UTF-8", "USER": "agent", "LOGNAME": "agent"}
    for key, value in declared.items():
        env[key] = _inside(value, root, tops)
    env["PATH"] = os.pathsep.join([*map(str, first), _visible_path(declared.get("PATH", ""), visible)])
    env[SANDBOX_ROOT_VARIABLE] = SANDBOX_MOUNT
    return env


def _inside(value: str, root: Path, tops: list[str]) -> str:
    """A host path in the sandbox as the confined process sees it (at its top folder's mount, else under
    ``/sandbox``); the sandbox root itself is its workspace; any other value as it is."""
    text = str(root)
    if value == text:
        return WORKSPACE
    if not value.startswith(text + "/"):
        return value
    rest = value[len(text):]
    top = "/" + rest.split("/")[1]
    return rest if top in tops else SANDBOX_MOUNT + rest


def _visible_path(declared: str, visible: list[Path]) -> str:
    """The declared PATH's folders the process can see, then the system's."""
    system = SYSTEM_PATH.split(":")
    kept = [part for part in declared.split(os.pathsep)
            if part and part not in system and _under(Path(part), visible)]
    return os.pathsep.join([*kept, *system])


def enforced_limits(spec: LaunchSpec, *, cgroup: bool = False) -> dict[str, int]:
    """The limits the process gets, as recorded: only what the kernel will enforce. The rlimits (none without
    ``prlimit``; the process count not for root, whom the kernel exempts from it), and with a ``cgroup`` of its
    own the agent's memory and processes as a whole (for root too)."""
    limits = _rlimits(spec, cgroup=cgroup)
    if cgroup:
        limits.update(memory_mb=spec.memory_limit_mb or DEFAULT_MEMORY_MB,
                      processes=spec.process_limit or DEFAULT_PROCESSES)
    limits["disk_mb"] = spec.disk_limit_mb or DEFAULT_DISK_MB  # watched always (runtime/confinement/disk.py)
    return limits


def _rlimits(spec: LaunchSpec, *, cgroup: bool) -> dict[str, int]:
    """The limits ``prlimit`` sets in each process (the process count only without a cgroup that counts it)."""
    if not os.access(PRLIMIT, os.X_OK):
        logger.warning("%s is missing: confined processes run without per-process resource limits", PRLIMIT)
        return {}
    limits = {"memory_mb": spec.memory_limit_mb or DEFAULT_MEMORY_MB,
              "cpu_seconds": spec.cpu_limit_seconds or DEFAULT_CPU_SECONDS}
    if os.getuid() != 0 and not cgroup:
        limits["processes"] = spec.process_limit or DEFAULT_PROCESSES
    return limits


def _prlimit_argv(spec: LaunchSpec, *, cgroup: bool) -> list[str]:
    """``prlimit`` run first inside, so a process count counts only the sandbox's own user namespace."""
    limits = _rlimits(spec, cgroup=cgroup)
    if not limits:
        return []
    argv = [PRLIMIT, f"--data={limits['memory_mb'] * 1024 * 1024}", "--core=0",
            f"--cpu={limits['cpu_seconds']}:{limits['cpu_seconds'] + CPU_GRACE_SECONDS}",
            f"--fsize={(spec.disk_limit_mb or DEFAULT_DISK_MB) * 1024 * 1024}"]
    if "processes" in limits:
        argv.append(f"--nproc={limits['processes']}")
    return [*argv, "--"]


def limit_hit(spec: LaunchSpec, code: int, stderr: str, hits: Hits | None = None, *,
              disk_hit: bool = False) -> str | None:
    """The limit a confined process's exit points at (``cpu time limit (cpu_limit_seconds=7200)``), or None;
    ``hits``: what its cgroup counted, when it has one (an OOM kill, refused forks); ``disk_hit``: its disk watcher
    stopped it."""
    limits = enforced_limits(spec, cgroup=hits is not None)
    if disk_hit or (code != 0 and (code in _SIGXFSZ_EXITS or _DISK_SIGNS.search(stderr))):
        return f"disk limit (disk_limit_mb={limits['disk_mb']})"
    if code in _SIGXCPU_EXITS and "cpu_seconds" in limits:
        return f"cpu time limit (cpu_limit_seconds={limits['cpu_seconds']})"
    if code != 0 and hits is not None and hits.oom_kills:
        return f"memory limit (memory_limit_mb={limits['memory_mb']})"
    if code != 0 and hits is not None and hits.refused_forks:
        return f"process limit (process_limit={limits['processes']})"
    if _MEMORY_SIGNS.search(stderr) and "memory_mb" in limits:
        return f"memory limit (memory_limit_mb={limits['memory_mb']})"
    if _PROCESS_SIGNS.search(stderr) and "processes" in limits:
        return f"process limit (process_limit={limits['processes']})"
    return None


def confine_by_default(spec: LaunchSpec, *, kind_given: bool) -> LaunchSpec:
    """An agent's spec with the confined launcher when it names no launcher and runs a command (the
    default: docs/security.md, "Which agents run confined"); as it is when it opts out (``confinement: none``,
    a ``kind``, the setting)."""
    if kind_given or spec.kind != "process" or spec.confinement == "none":
        return spec
    if get_settings().agent_confinement == "none" or not sys.platform.startswith("linux"):
        return spec
    return spec.model_copy(update={"kind": CONFINED_KIND})


def unconfined_record(spec: LaunchSpec) -> Confinement:
    """What is recorded for an agent run as a plain local process: that it was not confined, and why."""
    if spec.confinement == "none":
        why = "confinement: none"
    elif not sys.platform.startswith("linux"):
        why = f"not supported on {sys.platform}"
    elif get_settings().agent_confinement == "none":
        why = "PREFECT_AGENTENV_AGENT_CONFINEMENT=none"
    else:
        why = "kind: process"
    return Confinement(mechanism="none", network="host", opted_out=why)
