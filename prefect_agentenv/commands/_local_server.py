"""The local Prefect server of an agentenv home: started once in the background, found, checked, stopped.

It is ``prefect server start`` on loopback, in a session of its own (a closed terminal or a Ctrl-C
in the command that started it does not stop it), with its output in a log file and nothing of
the starting command's streams, so a pipeline never waits on it. Its files, under
``<home>/server/``:

* ``server.json`` — its PID, port and Prefect version, written by the process that started it once
  it answers; the handle every later command finds, checks and stops it by (never by name).
* ``server.log`` — what the server printed.
* ``server.lock`` — held while a process starts or stops the server, so that two commands started
  at once start one server.

The database is Prefect's own (``PREFECT_HOME/prefect.db`` unless
``PREFECT_SERVER_DATABASE_CONNECTION_URL`` says otherwise): the one Prefect's temporary server
uses, so blocks registered and runs recorded either way are found by both. Prefect migrates it
when a server starts.
"""

from __future__ import annotations

import contextlib
import http.client
import importlib.metadata
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path

from pydantic import BaseModel, ValidationError

from prefect_agentenv.exceptions import LocalServerError
from prefect_agentenv.runtime.launch.ports import LOOPBACK, free_port

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no lock, two commands at once may start two servers
    fcntl = None  # type: ignore[assignment]

START_TIMEOUT_SECONDS = 120.0
"""How long a start may take: the first one creates and migrates the database, which took over 20 s
on a busy 2-core machine (see ``prefect_defaults``); later starts take a few seconds."""

STOP_TIMEOUT_SECONDS = 15.0
"""How long the server has to stop after SIGTERM before SIGKILL (it closes open UI connections)."""

HUNG_GRACE_SECONDS = 15.0
"""How long a live server that does not answer its health check is waited for before it is
restarted: a server recording a large benchmark on SQLite can be slow to answer for a moment."""

Progress = Callable[[str, float], None]
"""Called while waiting: what is awaited (``starting``, ``waiting for another command``,
``stopping``), and the seconds waited so far."""


class ServerState(BaseModel):
    """What ``server.json`` records of a running local server."""

    pid: int
    port: int
    prefect_version: str
    started_at: str

    @property
    def url(self) -> str:
        """The server's base URL: its UI."""
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def api_url(self) -> str:
        return f"{self.url}/api"


def prefect_version() -> str:
    """The installed Prefect's version, without importing Prefect."""
    return importlib.metadata.version("prefect")


class LocalServer:
    """The local Prefect server of one agentenv home (its folder: ``<home>/server``)."""

    def __init__(self, folder: Path, *, preferred_port: int = 4200) -> None:
        self.folder = folder
        self.preferred_port = preferred_port

    @property
    def state_path(self) -> Path:
        return self.folder / "server.json"

    @property
    def log_path(self) -> Path:
        return self.folder / "server.log"

    @property
    def lock_path(self) -> Path:
        return self.folder / "server.lock"

    def state(self) -> ServerState | None:
        """What ``server.json`` says, or None (no file, or one that cannot be read)."""
        try:
            return ServerState.model_validate_json(self.state_path.read_bytes())
        except (OSError, ValidationError):
            return None

    def running(self) -> ServerState | None:
        """The server, if its process is alive, is ours and answers its health check."""
        state = self.state()
        if state is not None and _is_ours(state) and healthy(state.port):
            return state
        return None

    def ensure(self, progress: Progress | None = None, timeout: float = START_TIMEOUT_SECONDS) -> tuple[ServerState, bool]:
        """The running server, started (or restarted when dead or hung) if need be, and whether
        this call started it.

        Raises:
            LocalServerError: It did not answer within ``timeout`` (it is stopped again), or another
                process held the lock for longer than that.
        """
        if (state := self.running()) is not None:
            return state, False
        self.folder.mkdir(parents=True, exist_ok=True)
        with self._locked(progress, timeout + STOP_TIMEOUT_SECONDS):
            # Another command may have started it while this one waited for the lock.
            state = self.state()
            if state is not None and _is_ours(state) and _wait_healthy(state.port, HUNG_GRACE_SECONDS):
                return state, False
            if state is not None:
                self._stop_locked(state)
            return self._start_locked(progress, timeout), True

    def stop(self, progress: Progress | None = None) -> ServerState | None:
        """Stop the server by its recorded PID (only if that process is still ours); what it was, or None."""
        if self.state() is None:
            return None
        with self._locked(progress, START_TIMEOUT_SECONDS + STOP_TIMEOUT_SECONDS):
            state = self.state()
            if state is not None:
                self._stop_locked(state, progress)
            return state

    def _start_locked(self, progress: Progress | None, timeout: float) -> ServerState:
        started = time.monotonic()
        port = self._port()
        process = self._spawn(port)
        try:
            ready = self._await_ready(process, port, progress, started, timeout)
            if not ready and _port_was_taken(self.log_path):  # another program bound it first: once more
                port = free_port(LOOPBACK)
                process = self._spawn(port)
                ready = self._await_ready(process, port, progress, started, timeout)
        except BaseException:  # Ctrl-C while it starts: a server nobody asked to keep is stopped
            _terminate(process.pid)
            raise
        if not ready:
            _terminate(process.pid)
            raise LocalServerError(f"the local Prefect server did not start within {timeout:.0f}s "
                                   f"(exit code {process.poll()}); its log: {self.log_path}")
        state = ServerState(pid=process.pid, port=port, prefect_version=prefect_version(),
                            started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(state.model_dump_json(indent=2) + "\n", encoding="utf-8")
        tmp.replace(self.state_path)
        return state

    def _port(self) -> int:
        """The port it had last time (a stable UI address), else the preferred one, else a free one."""
        last = self.state()
        for port in ([last.port] if last is not None else []) + [self.preferred_port]:
            if _bindable(port):
                return port
        return free_port(LOOPBACK)

    def _spawn(self, port: int) -> subprocess.Popen[bytes]:
        """``prefect server start`` on ``port``, detached from this process's session and streams."""
        api = f"http://{LOOPBACK}:{port}/api"
        env = {**os.environ, "PREFECT_API_URL": api, "PREFECT_UI_API_URL": api,
               "PREFECT_SERVER_API_HOST": LOOPBACK, "PREFECT_SERVER_API_PORT": str(port)}
        env.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
        with self.log_path.open("ab") as log:
            log.write(f"--- {datetime.now(timezone.utc).isoformat(timespec='seconds')} starting on port {port}\n"
                      .encode())
            log.flush()
            return subprocess.Popen(
                [sys.executable, "-m", "prefect", "server", "start", "--host", LOOPBACK, "--port", str(port)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.folder,
                start_new_session=True)

    def _await_ready(self, process: subprocess.Popen[bytes], port: int, progress: Progress | None,
                     started: float, timeout: float) -> bool:
        """Whether the server answered before ``timeout`` (False as soon as its process ends)."""
        while time.monotonic() - started < timeout:
            if process.poll() is not None:
                return False
            if healthy(port, timeout=1.0):
                return True
            if progress is not None:
                progress("starting", time.monotonic() - started)
            time.sleep(0.2)
        return False

    def _stop_locked(self, state: ServerState, progress: Progress | None = None) -> None:
        """Stop the recorded process if it is still ours (a PID reused after a reboot is left alone),
        then forget it."""
        if _is_ours(state):
            _terminate(state.pid, progress)
        self.state_path.unlink(missing_ok=True)

    @contextlib.contextmanager
    def _locked(self, progress: Progress | None, timeout: float) -> Iterator[None]:
        """Hold ``server.lock``; while another process holds it, say so through ``progress``."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with self.lock_path.open("a") as handle:
            if fcntl is not None:
                _acquire(handle.fileno(), progress, timeout, self.lock_path)
            try:
                yield
            finally:
                if fcntl is not None:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _acquire(fd: int, progress: Progress | None, timeout: float, path: Path) -> None:
    started = time.monotonic()
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            waited = time.monotonic() - started
            if waited > timeout:
                raise LocalServerError(f"another command held {path} for over {timeout:.0f}s") from None
            if progress is not None:
                progress("waiting for another command", waited)
            time.sleep(0.2)


def healthy(port: int, timeout: float = 2.0) -> bool:
    """Whether a Prefect server answers ``/api/health`` on the loopback ``port``."""
    conn = http.client.HTTPConnection(LOOPBACK, port, timeout=timeout)
    try:
        conn.request("GET", "/api/health")
        return conn.getresponse().status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        conn.close()


def _wait_healthy(port: int, grace: float) -> bool:
    deadline = time.monotonic() + grace
    while not healthy(port):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


def _port_was_taken(log: Path) -> bool:
    tail = log.read_text(errors="replace")[-2000:].lower() if log.exists() else ""
    return "already in use" in tail


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs; a child of this process that ended is reaped, not counted alive."""
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: not ours
        return False
    return True


def _is_ours(state: ServerState) -> bool:
    """Whether the recorded PID is still the ``prefect server start`` we spawned on its port."""
    if not _alive(state.pid):
        return False
    argv = _command_line(state.pid)
    return argv is None or ("server" in argv and "start" in argv and str(state.port) in argv)


def _command_line(pid: int) -> list[str] | None:
    """The process's argv (Linux's /proc, else ``ps``); None when neither can tell."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        pass
    try:
        out = subprocess.run(["ps", "-o", "command=", "-p", str(pid)], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.split() if out.returncode == 0 else []


def _terminate(pid: int, progress: Progress | None = None) -> None:
    """SIGTERM, up to :data:`STOP_TIMEOUT_SECONDS` to stop, then SIGKILL: this one process."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    started = time.monotonic()
    while _alive(pid):
        waited = time.monotonic() - started
        if waited > STOP_TIMEOUT_SECONDS:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            while _alive(pid) and time.monotonic() - started < STOP_TIMEOUT_SECONDS + 5:
                time.sleep(0.1)
            return
        if progress is not None:
            progress("stopping", waited)
        time.sleep(0.1)
