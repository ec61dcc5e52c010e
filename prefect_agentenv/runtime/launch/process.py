"""The local-process launcher: a server started from an argv template on a free loopback port.

Each instance runs in its own session, stdout and stderr in the run's folder; stopping SIGTERMs
its group, waits a bounded grace, then SIGKILLs it. On Linux every command runs under
``runtime/launch/supervisor.py``, which SIGKILLs its group on the parent-death signal (prctl),
so a run killed outright leaves no orphans; the kernel ties that signal to the forking *thread*,
so children fork from one spawner thread that lives as long as the process. Every child carries
``PREFECT_AGENTENV_RUN_ID`` for the next start's sweep (``runtime/resources/leftovers.py``). The
prctl ``preexec_fn`` only calls a libc function resolved before the fork: it takes no lock.
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import functools
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from prefect_agentenv.context import Confinement
from prefect_agentenv.exceptions import DeployError, InstanceExitedError, ResourceLimitError
from prefect_agentenv.runtime.launch.base import (
    Instance,
    LauncherKind,
    LaunchSpec,
    fill_template,
    join_url,
    new_instance_id,
    new_probe_client,
    tail,
    wait_until_ready,
)
from prefect_agentenv.runtime.launch.ports import LOOPBACK, free_port
from prefect_agentenv.runtime.launch.tree import INSTANCE_MARKER, kill_tree
from prefect_agentenv.runtime.resources.leftovers import RUN_MARKER

logger = logging.getLogger("prefect_agentenv.runtime.launch.process")

_PR_SET_PDEATHSIG = 1
_ADDRESS_IN_USE = re.compile(r"address already in use|errno 98|eaddrinuse", re.IGNORECASE)
_PORT_RETRIES = 3  # new ports tried after one is found taken
_POLL_SECONDS = 0.02


def _load_prctl() -> Any:
    # Loaded once in the parent: the child must not import or dlopen between fork and exec.
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_prctl = _load_prctl()

# One thread forks every child, for the life of the process (see the module docstring).
_spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentenv-spawner")


_SUPERVISOR = str(Path(__file__).with_name("supervisor.py"))


def _die_with_parent(parent_pid: int) -> None:
    """Runs in the child between fork and exec: signal me (the supervisor) when my parent goes away."""
    if _prctl is None:
        return
    _prctl(_PR_SET_PDEATHSIG, signal.SIGUSR1, 0, 0, 0)
    # The parent may have died before prctl took effect; then we were already re-parented.
    if os.getppid() != parent_pid:
        os.kill(os.getpid(), signal.SIGKILL)


@dataclass
class _Running:
    instance: Instance
    process: subprocess.Popen[bytes]
    follow_tree: bool = False
    spec: LaunchSpec | None = None


@dataclass
class Command:
    """What a process launcher runs for one instance."""

    argv: list[str]
    env: dict[str, str]
    """The whole environment of the process (nothing else is inherited)."""
    cwd: Path | None
    confinement: Confinement | None = None
    """What confines it, recorded on the instance (None: a plain process)."""


class ProcessLauncher:
    """Starts servers as local processes on free loopback ports.

    Args:
        run_id: the run these instances belong to (``cleanup`` stops only when it matches).
        http_client: the run's shared client for readiness probes; a private one otherwise.
        stop_grace_seconds: how long ``stop`` waits after SIGTERM before SIGKILL.
        host: interface the servers bind; loopback unless an agent must be reached from elsewhere.
    """

    kind: LauncherKind = "process"

    def __init__(self, *, run_id: str | None = None, http_client: httpx.AsyncClient | None = None,
                 stop_grace_seconds: float = 5.0, host: str = LOOPBACK) -> None:
        self.run_id = run_id
        self.stop_grace_seconds = stop_grace_seconds
        self.host = host
        self._client = http_client
        self._running: dict[str, _Running] = {}

    @property
    def instances(self) -> list[Instance]:
        """Instances started by this launcher and not stopped yet."""
        return [r.instance for r in self._running.values()]

    async def start(self, spec: LaunchSpec, *, name: str, workdir: Path, cwd: Path | None = None,
                    extra_env: dict[str, str] | None = None) -> Instance:
        """Start ``spec.command`` and return once it is ready (see :class:`Launcher`).

        Raises:
            DeployError: the command is missing or cannot be run, the server exited before it
                was ready (with its exit code and last stderr lines), or it timed out.
        """
        if not spec.command:
            raise DeployError(f"{name!r}: the process launcher needs a command, got {spec.describe()}")
        # A port taken before its bind (by another program, an outgoing connection) is picked anew.
        retries = _PORT_RETRIES
        while True:
            try:
                return await self._start_once(spec, name=name, workdir=workdir, cwd=cwd, extra_env=extra_env)
            except _PortTaken as exc:
                if retries == 0:
                    raise exc.error from None
                retries -= 1
                logger.info("%s: port %s was taken before the server bound it; retrying", name, exc.port)

    async def _start_once(self, spec: LaunchSpec, *, name: str, workdir: Path, cwd: Path | None,
                          extra_env: dict[str, str] | None) -> Instance:
        port = free_port(self.host)
        instance_id = new_instance_id(name)
        try:
            await self._prepare(spec, name=name, instance_id=instance_id, port=port)
        except OSError as exc:
            self._release(instance_id)
            error = DeployError(f"{name!r}: cannot take port {port} on {self.host}: {exc}")
            if exc.errno == errno.EADDRINUSE:
                raise _PortTaken(port, error) from None
            raise error from None
        except BaseException:
            self._release(instance_id)
            raise
        try:
            return await self._launch(spec, name=name, workdir=workdir, cwd=cwd, extra_env=extra_env, port=port,
                                      instance_id=instance_id)
        except BaseException:
            self._release(instance_id)
            raise

    async def _prepare(self, spec: LaunchSpec, *, name: str, instance_id: str, port: int) -> None:
        """What must exist before the server starts (a confining launcher's network bridge); undone by
        :meth:`_release` when the start fails and when the instance stops.

        Raises:
            OSError: ``port`` is taken (the start is retried once on another).
        """

    def _release(self, instance_id: str) -> None:
        """Undo :meth:`_prepare` (synchronous: it runs on cancellation paths too)."""

    def _started(self, spec: LaunchSpec, *, instance_id: str, pid: int, cwd: Path | None) -> None:
        """What watches the server once its process exists (a confining launcher's disk watcher); undone by
        :meth:`_release`."""

    async def _launch(self, spec: LaunchSpec, *, name: str, workdir: Path, cwd: Path | None,
                      extra_env: dict[str, str] | None, port: int, instance_id: str) -> Instance:
        base_url = f"http://{self.host}:{port}"
        logs = Path(workdir) / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        stdout_path = logs / f"{instance_id}.stdout.log"
        stderr_path = logs / f"{instance_id}.stderr.log"
        command = self._command(spec, name=name, port=port, cwd=cwd, extra_env=extra_env, instance_id=instance_id)
        process = await _spawn(command.argv, env=command.env, cwd=command.cwd, stdout_path=stdout_path,
                               stderr_path=stderr_path, name=name)
        self._started(spec, instance_id=instance_id, pid=process.pid, cwd=command.cwd)
        instance = Instance(instance_id=instance_id, name=name, kind=self.kind, base_url=base_url,
                            mcp_url=join_url(base_url, spec.mcp_path), pid=process.pid,
                            stdout_path=stdout_path, stderr_path=stderr_path, confinement=command.confinement)
        logger.info("%s: started pid %s on %s", name, process.pid, base_url)
        logger.debug("%s: argv %s", name, command.argv)

        exit_code: int | None = None
        limit: str | None = None

        async def exited() -> str | None:
            nonlocal exit_code, limit
            exit_code = _exit_status(process)
            if exit_code is not None:
                reason, limit = self._exit_reason(spec, exit_code, stderr_path, instance_id)
                return reason
            return None

        try:
            if self._client is not None:
                await wait_until_ready(spec, base_url, name=repr(name), client=self._client, exited=exited)
            else:
                async with new_probe_client() as client:
                    await wait_until_ready(spec, base_url, name=repr(name), client=client, exited=exited)
        except DeployError as exc:
            await _terminate(process, grace=0)
            _sweep_tree(spec, instance_id)
            stderr = tail(stderr_path)
            text = f"{exc}{_stderr_note(stderr, stderr_path)}"
            error = ResourceLimitError(text, limit=limit) if limit else DeployError(text)
            if exit_code is not None and spec.told_port and _ADDRESS_IN_USE.search(stderr):
                raise _PortTaken(port, error) from None
            raise error from None
        except BaseException:
            # Cancelled (or worse) while waiting: the half-started server must not outlive us.
            _kill_now(process)
            _sweep_tree(spec, instance_id)
            raise
        self._running[instance_id] = _Running(instance, process, spec.follow_tree, spec)
        return instance

    def _command(self, spec: LaunchSpec, *, name: str, port: int, cwd: Path | None,
                 extra_env: dict[str, str] | None, instance_id: str) -> Command:
        """What to run for one instance: the spec's argv in the runner's environment plus the spec's
        (a launcher that confines the server, ``runtime/confinement/confined.py``, builds its own)."""
        argv = [fill_template(part, host=self.host, port=port) for part in spec.command or []]
        env = _child_env(spec, host=self.host, port=port, extra_env=extra_env, run_id=self.run_id)
        env.update(sandbox_folders_env(spec, cwd))
        if spec.follow_tree:
            env[INSTANCE_MARKER] = instance_id
        return Command(argv, env, cwd)

    def _exit_reason(self, spec: LaunchSpec, code: int, stderr_path: Path | None,
                     instance_id: str | None = None) -> tuple[str, str | None]:
        """Why the server is gone, as errors say it, and the resource limit that stopped it (a confining
        launcher's; asked before :meth:`_release`, while what the instance's limits counted can be read)."""
        return f"exit code {code}", None

    async def stop(self, instance: Instance) -> None:
        """SIGTERM the instance's process group, wait up to the grace, then SIGKILL it.

        Idempotent: an instance this launcher does not run (any more) is left alone.

        Raises:
            InstanceExitedError: the server had already exited on its own (it crashed during the
                run); its group is swept all the same, and the error carries the exit code.
        """
        running = self._running.pop(instance.instance_id, None)
        if running is None:
            return
        gone = _exit_status(running.process)
        reason, limit = f"exit code {gone}", None
        try:
            code = await _terminate(running.process, grace=self.stop_grace_seconds)
            if gone is not None and running.spec is not None:
                reason, limit = self._exit_reason(running.spec, gone, instance.stderr_path, instance.instance_id)
        except BaseException:
            _kill_now(running.process)
            raise
        finally:
            if running.follow_tree:
                kill_tree(instance.instance_id)
            self._release(instance.instance_id)
        if gone is not None:
            note = _stderr_note(tail(instance.stderr_path), instance.stderr_path) if instance.stderr_path else ""
            raise InstanceExitedError(f"{instance.name} (pid {running.process.pid}) exited on its own during the "
                                      f"run with {reason}{note}", exit_code=gone, limit=limit)
        logger.info("%s: stopped pid %s (exit %s)", instance.name, running.process.pid, code)

    async def cleanup(self, run_id: str, interrupted: bool) -> None:
        """Stop what is still running for ``run_id``: without grace when the run was interrupted."""
        if self.run_id is not None and run_id != self.run_id:
            return
        grace = 0.0 if interrupted else self.stop_grace_seconds
        for instance_id in list(self._running):
            running = self._running.pop(instance_id)
            if not interrupted:
                logger.warning("%s was still running at the end of run %s; stopping it", running.instance.name, run_id)
            try:
                await _terminate(running.process, grace=grace)
            except Exception:  # best effort: one failure must not keep the others running
                logger.exception("could not stop %s", running.instance.name)
                _kill_now(running.process)
            if running.follow_tree:
                kill_tree(instance_id)
            self._release(instance_id)


class _PortTaken(Exception):
    def __init__(self, port: int, error: DeployError) -> None:
        super().__init__(str(error))
        self.port, self.error = port, error


def _child_env(spec: LaunchSpec, *, host: str, port: int, extra_env: dict[str, str] | None,
               run_id: str | None = None) -> dict[str, str]:
    # The server inherits this process's environment (PATH, virtualenv, proxies) like any child.
    env = dict(os.environ)
    env.update({k: fill_template(v, host=host, port=port) for k, v in spec.env.items()})
    env.update(spec.secret_values())
    env.update(extra_env or {})
    if run_id:
        env[RUN_MARKER] = run_id
    return env


def sandbox_folders_env(spec: LaunchSpec, cwd: Path | None) -> dict[str, str]:
    """``spec.sandbox_env`` as absolute folders under the server's working folder, made now."""
    env: dict[str, str] = {}
    root = Path(cwd) if cwd is not None else Path.cwd()
    for name, relative in spec.sandbox_env.items():
        folder = (root / relative).resolve()
        if not folder.is_relative_to(root.resolve()):
            raise DeployError(f"sandbox_env {name}={relative!r} leaves the folder the server starts in")
        folder.mkdir(parents=True, exist_ok=True)
        env[name] = str(folder)
    return env


def _sweep_tree(spec: LaunchSpec, instance_id: str) -> None:
    """What a failed start of a tree-following server left outside its group."""
    if spec.follow_tree:
        kill_tree(instance_id)


async def _spawn(argv: list[str], *, env: dict[str, str], cwd: Path | None, stdout_path: Path,
                 stderr_path: Path, name: str) -> subprocess.Popen[bytes]:
    with stdout_path.open("ab") as out, stderr_path.open("ab") as err:
        try:
            return await spawn_supervised(argv, env=env, cwd=cwd, stdout=out, stderr=err)
        except OSError as exc:
            where = f" in {cwd}" if cwd is not None else ""
            raise DeployError(f"{name!r}: cannot run {argv[0]!r}{where}: {exc}") from exc


async def spawn_supervised(argv: list[str], *, env: dict[str, str], cwd: Path | None, stdout: Any,
                           stderr: Any) -> subprocess.Popen[bytes]:
    """Start ``argv`` in its own process group that dies with this process (see the module docstring).

    Raises:
        OSError: the command cannot be found or run (checked here, before the supervisor starts).
    """
    _check_runnable(argv, cwd=cwd, env=env)
    if _prctl is not None:
        argv = [sys.executable, "-I", "-S", _SUPERVISOR, str(os.getpid()), "--", *argv]

    # A caller cancelled while the spawner thread starts the process must not leave it running:
    # whichever side comes second (the thread with its process, the caller with its cancel) kills it.
    lock = threading.Lock()
    handed: list[subprocess.Popen[bytes]] = []
    abandoned = False

    def popen() -> subprocess.Popen[bytes]:
        process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, env=env, cwd=cwd,
            start_new_session=True,
            preexec_fn=functools.partial(_die_with_parent, os.getpid()) if _prctl is not None else None,
        )
        with lock:
            handed.append(process)
            orphan = abandoned
        if orphan:
            _kill_now(process)
        return process

    try:
        return await asyncio.shield(asyncio.get_running_loop().run_in_executor(_spawner, popen))
    except asyncio.CancelledError:
        with lock:
            abandoned = True
            started = list(handed)
        for process in started:
            _kill_now(process)
        raise


def _check_runnable(argv: list[str], *, cwd: Path | None, env: dict[str, str]) -> None:
    """The OSError Popen would raise for a missing command, raised before any process starts."""
    if cwd is not None and not Path(cwd).is_dir():
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(cwd))
    program = argv[0]
    if os.sep in program:
        path = Path(cwd or ".") / program if not os.path.isabs(program) else Path(program)
        if not path.is_file():
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
        if not os.access(path, os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), program)
    elif shutil.which(program, path=env.get("PATH")) is None:
        raise FileNotFoundError(errno.ENOENT, f"{os.strerror(errno.ENOENT)} (not found on PATH)", program)


def _exit_status(process: subprocess.Popen[bytes]) -> int | None:
    """Exit code (negative: signal) if the process has exited, *without* reaping it.

    A zombie keeps its pid, so the process group id stays ours until we reap: killing the
    group after this check can never reach an unrelated process that reused the id.
    """
    if process.returncode is not None:
        return process.returncode
    if not hasattr(os, "waitid"):  # macOS: no peeking, so reap (the group sweep is then skipped)
        return process.poll()
    try:
        info = os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return process.poll()
    if info is None or info.si_pid == 0:
        return None
    return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status


def _signal_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    if process.returncode is not None:
        return  # reaped: the group id may belong to someone else now
    try:
        os.killpg(process.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


async def _terminate(process: subprocess.Popen[bytes], *, grace: float) -> int | None:
    """Stop the whole process group and reap the leader; returns its exit code."""
    if process.returncode is not None:
        return process.returncode
    if grace > 0 and _exit_status(process) is None:
        _signal_group(process, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while _exit_status(process) is None and time.monotonic() < deadline:
            await asyncio.sleep(_POLL_SECONDS)
    # Always sweep with SIGKILL before reaping: the leader may be gone while helpers it forked
    # into its group still run. The supervisor first kills and reaps its command itself.
    await _supervisor_stop_now(process)
    _signal_group(process, signal.SIGKILL)
    for _ in range(250):
        if _exit_status(process) is not None:
            break
        await asyncio.sleep(_POLL_SECONDS)
    code = process.poll()
    if code is None:
        logger.warning("pid %s did not exit after SIGKILL", process.pid)
    return code


async def _supervisor_stop_now(process: subprocess.Popen[bytes]) -> None:
    """Ask a supervisor to kill and reap its command (no zombie left to an init that may not reap)."""
    if _prctl is None or _exit_status(process) is not None:
        return
    _signal_leader(process, signal.SIGUSR2)
    for _ in range(50):
        if _exit_status(process) is not None:
            return
        await asyncio.sleep(_POLL_SECONDS)


def _signal_leader(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    if process.returncode is None:
        try:
            os.kill(process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _kill_now(process: subprocess.Popen[bytes]) -> None:
    """Synchronous last resort (cancellation paths): SIGKILL the group and reap briefly."""
    if _prctl is not None and _exit_status(process) is None:
        _signal_leader(process, signal.SIGUSR2)
        try:
            process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            pass
    _signal_group(process, signal.SIGKILL)
    try:
        process.wait(timeout=1.0)
    except subprocess.TimeoutExpired:
        logger.warning("pid %s did not exit after SIGKILL", process.pid)


def _stderr_note(stderr: str, path: Path) -> str:
    if not stderr.strip():
        return f" (stderr was empty: {path})"
    return f"\nlast lines of its stderr ({path}):\n{stderr}"
