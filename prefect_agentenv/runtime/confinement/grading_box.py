"""A fresh confined sandbox for code that grades an agent's work (docs/security.md "Grading apart").

A command or script that checks what an agent did runs against a **copy** of the agent's sandbox,
never the live one, and in namespaces of its own made by bubblewrap, as agents are:

* **files**: the inputs (sandbox paths; by default the whole sandbox but the agent's ``home``) are
  copied into a new folder of the run, walked by directory handles so a link the agent swaps in
  mid-copy is not followed out of its sandbox; the copy's top folders are mounted where the agent
  saw them (``/app``, ``/tmp``), the whole copy at ``/sandbox``; the system and the runner's Python
  read-only; nothing else of the host;
* **files that change what runs** (a ``conftest.py``, ``sitecustomize.py``, a ``.pth``, a pytest
  configuration) are the task's or nobody's: one the agent added is removed from the copy, one it
  changed or removed is put back as the task loaded it. Each is recorded in the verification;
* **environment**: built from nothing: the step's own variables, a fresh ``HOME``, a ``PATH`` of the
  runner's Python and the system (never the agent's ``PATH``, never a folder of its sandbox);
* **network**: none, not even the agent's doors;
* **processes**: its own PID namespace, killed with the step.

Where bubblewrap cannot run (macOS, a kernel without user namespaces) the command runs as a plain
process on the copy, with the same environment, and the verification says so.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import stat
import sys
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from prefect_agentenv.runtime.confinement.bwrap import Bwrap, BwrapUnavailableError, Layout, bwrap_argv, working_bwrap
from prefect_agentenv.runtime.confinement.confined import SANDBOX_MOUNT, SYSTEM_PATH, install_folders, sandbox_mounts
from prefect_agentenv.runtime.confinement.netns import python_folders
from prefect_agentenv.runtime.confinement.shadowing import GRADING_SITE, in_skipped_folder, shadows
from prefect_agentenv.runtime.launch.command import CommandResult, run_bounded
from prefect_agentenv.runtime.resources.leftovers import RUN_MARKER
from prefect_agentenv.runtime.resources.sandbox import HOME_FOLDER, SANDBOX_ROOT_VARIABLE, Sandbox, runs_code

logger = logging.getLogger("prefect_agentenv.runtime.confinement.grading_box")

__all__ = ["GradingBox", "GradingRecord", "SetAside", "open_box"]


@dataclass(frozen=True)
class SetAside:
    """A file that changes what runs, not as the task left it: ``removed`` (the agent's) or ``restored``."""

    path: str
    action: str

    def render(self) -> str:
        return f"{self.path} ({self.action})"


@dataclass(frozen=True)
class GradingRecord:
    """What a verification keeps of where its grading code ran (its ``grading_sandbox``)."""

    mechanism: str
    """``bwrap 0.11.0``, ``docker 20.10.24``, or ``none (why)``."""
    network: str
    """``none`` (no network at all) or ``host``."""
    inputs: tuple[str, ...] = ()
    """The sandbox paths copied in."""
    set_aside: tuple[str, ...] = ()
    """Files that change what runs, removed or restored (``/app/conftest.py (removed)``)."""
    image: str | None = None
    """The image of a fresh container, when the code ran in one."""

    def as_json(self) -> dict[str, object]:
        data: dict[str, object] = {"mechanism": self.mechanism, "network": self.network, "inputs": list(self.inputs),
                                   "set_aside": list(self.set_aside)}
        return data if self.image is None else {**data, "image": self.image}

    def in_container(self, image: str, mechanism: str) -> GradingRecord:
        """The same copy, run in a fresh container of ``image`` with no network."""
        return replace(self, mechanism=mechanism, network="none", image=image)


@dataclass
class GradingBox:
    """A copy of a sandbox, and the way commands run in it.

    Attributes:
        root: the copy's folder on the host.
        sandbox: the copy as a :class:`Sandbox` (host paths of sandbox paths, symlink-safe).
        inputs: the sandbox paths copied.
        set_aside: files that change what runs, removed or restored.
        bwrap: the bubblewrap that confines its commands; None when they run unconfined.
        unconfined_why: why they run unconfined.
    """

    root: Path
    sandbox: Sandbox
    inputs: tuple[str, ...]
    set_aside: list[SetAside] = field(default_factory=list)
    bwrap: Bwrap | None = None
    unconfined_why: str | None = None

    def record(self) -> GradingRecord:
        """What the verification keeps of it: how it was confined, what it held, what was set aside."""
        mechanism = f"bwrap {self.bwrap.version}" if self.bwrap else f"none ({self.unconfined_why})"
        return GradingRecord(mechanism, "none" if self.bwrap else "host", self.inputs,
                             tuple(s.render() for s in self.set_aside))

    @property
    def root_inside(self) -> str:
        """The copy's root as its commands see it (``$AGENTENV_SANDBOX_ROOT``)."""
        return SANDBOX_MOUNT if self.bwrap else str(self.root)

    def inside(self, sandbox_path: str) -> str:
        """Where a sandbox path (absolute, or relative to the sandbox root) is for a command in the box."""
        if self.bwrap is None:
            return str(self.sandbox.path(sandbox_path))
        posix = PurePosixPath(sandbox_path)
        return str(posix) if posix.is_absolute() else str(PurePosixPath(SANDBOX_MOUNT) / posix)

    async def run(self, argv: Sequence[str], *, cwd: str, env: dict[str, str], run_id: str, timeout: float,
                  max_output_bytes: int, merge_stderr: bool = False,
                  read_only_at: tuple[tuple[Path, str], ...] = ()) -> CommandResult:
        """Run ``argv`` in the box: working folder ``cwd`` (a sandbox path), ``env`` over the box's own.

        Raises:
            OSError: the command cannot be run.
        """
        declared = {**env, "PATH": os.pathsep.join([str(Path(sys.executable).parent), SYSTEM_PATH]),
                    **safe_import_path(env.get("PYTHONPATH"))}
        full = _box_env(declared, run_id, sandbox_root=self.root_inside,
                        home=self.inside(f"/{HOME_FOLDER}"), tmp=self.inside("/tmp"))
        if self.bwrap is None:
            return await run_bounded(list(argv), cwd=self.sandbox.path(cwd), env=full, timeout=timeout,
                                     max_output_bytes=max_output_bytes, merge_stderr=merge_stderr)
        layout = Layout(writable=tuple(sandbox_mounts(self.root)), read_only=(*_runner_python(), GRADING_SITE),
                        read_only_at=read_only_at, chdir=self.inside(cwd), share_net=False, hostname="grader")
        return await run_bounded(bwrap_argv(self.bwrap.path, layout, list(argv)), cwd=self.root, env=full,
                                 timeout=timeout, max_output_bytes=max_output_bytes, merge_stderr=merge_stderr)

    def remove(self) -> None:
        """Delete the copy (best effort: a run's folder goes at its end anyway)."""
        self.sandbox.remove()


def open_box(sandbox: Sandbox, parent: Path, *, inputs: Sequence[str] | None = None) -> GradingBox:
    """A fresh copy of ``sandbox``'s inputs under ``parent``, with the files that change what runs set
    as the task left them.

    Raises:
        UnsafeSandboxPathError: an input leaves the sandbox.
    """
    parent.mkdir(parents=True, exist_ok=True)
    root = (parent / f"grading-{uuid.uuid4().hex[:8]}").resolve()
    root.mkdir()
    box = Sandbox(root=root, agent_name=f"grading of {sandbox.agent_name}", kind="dir")
    chosen = tuple(inputs) if inputs else _default_inputs(sandbox)
    for path in chosen:
        _copy(sandbox.path(path), root / _relative(path))
    for folder in (HOME_FOLDER, "tmp", "app"):
        (root / folder).mkdir(exist_ok=True)
    grading = GradingBox(root=root, sandbox=box, inputs=chosen, set_aside=_set_aside(sandbox, root))
    try:
        grading.bwrap = working_bwrap() if sys.platform.startswith("linux") else None
        if grading.bwrap is None:
            grading.unconfined_why = f"not supported on {sys.platform}"
    except BwrapUnavailableError as exc:
        grading.unconfined_why = str(exc)
    if grading.bwrap is None:
        logger.warning("grading code runs unconfined on a copy of %s's sandbox: %s", sandbox.agent_name,
                       grading.unconfined_why)
    return grading


def _default_inputs(sandbox: Sandbox) -> tuple[str, ...]:
    """The whole sandbox but the agent's home (its harness's own state, not its work)."""
    return tuple(f"/{child.name}" for child in sorted(sandbox.root.iterdir())
                 if child.name != HOME_FOLDER and not child.is_symlink())


def _relative(path: str) -> str:
    return str(PurePosixPath(path)).lstrip("/") or "."


def _copy(source: Path, target: Path) -> None:
    """Copy a file or a folder tree without following a symlink out: folders are walked by handle
    (``os.fwalk``) and files opened ``O_NOFOLLOW`` relative to them; links are copied as links (inside
    the box they point into the box); sockets, pipes and devices are skipped."""
    try:
        info = source.lstat()
    except FileNotFoundError:
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    if stat.S_ISLNK(info.st_mode):
        os.symlink(os.readlink(source), target)
    elif stat.S_ISREG(info.st_mode):
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
        _copy_fd(fd, target, info.st_mode)
    elif stat.S_ISDIR(info.st_mode):
        _copy_tree(source, target)


def _copy_tree(source: Path, target: Path) -> None:
    for folder, folders, files, dir_fd in os.fwalk(source, follow_symlinks=False):
        here = target / Path(folder).relative_to(source)
        here.mkdir(parents=True, exist_ok=True)
        for name in [*files, *folders]:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode):
                os.symlink(os.readlink(name, dir_fd=dir_fd), here / name)
            elif stat.S_ISREG(info.st_mode):
                _copy_fd(os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dir_fd), here / name, info.st_mode)


def _copy_fd(fd: int, target: Path, mode: int) -> None:
    with os.fdopen(fd, "rb") as source, open(target, "wb") as out:
        shutil.copyfileobj(source, out)
    os.chmod(target, stat.S_IMODE(mode) | stat.S_IRUSR | stat.S_IWUSR)


def _set_aside(sandbox: Sandbox, root: Path) -> list[SetAside]:
    """Remove the files that change what runs and that the task did not load; put back the task's own."""
    found: list[SetAside] = []
    task_files = sandbox.task_files
    for folder, folders, files in os.walk(root):
        for name in [*files, *folders]:
            path = Path(folder) / name
            key = path.relative_to(root).as_posix()
            if not (runs_code(path) or _shadows(path, key, task_files)) or (key in task_files
                                                                           and _same(path, task_files[key])):
                continue
            _delete(path)
            found.append(SetAside(f"/{key}", "restored" if key in task_files else "removed"))
    for key, content in task_files.items():
        path = root / key
        if not path.is_relative_to(root) or not _copied(key, root):
            continue
        if not os.path.lexists(path):
            if f"/{key}" not in {s.path for s in found}:
                found.append(SetAside(f"/{key}", "restored"))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
    return sorted(found, key=lambda s: s.path)


def _shadows(path: Path, key: str, task_files: dict[str, bytes]) -> bool:
    """A module or package that would hide one of the grading Python's library, and not the task's own package
    (a folder the task loaded files into)."""
    if in_skipped_folder(Path(key)) or not shadows(path):
        return False
    return not (path.is_dir() and any(other.startswith(f"{key}/") for other in task_files))


def safe_import_path(declared: str | None) -> dict[str, str]:
    """The variables that give a grading command's Python a safe import path: the folder it starts in is not
    first (``PYTHONSAFEPATH``), ``grading_site``'s ``sitecustomize`` puts it back last, then the step's own
    ``PYTHONPATH``."""
    return {"PYTHONSAFEPATH": "1", "PYTHONPATH": os.pathsep.join(filter(None, [str(GRADING_SITE), declared]))}


def _copied(key: str, root: Path) -> bool:
    """Whether the task file's top folder was copied (a narrower ``inputs`` leaves the rest out)."""
    return (root / key.split("/", 1)[0]).is_dir()


def _same(path: Path, content: bytes) -> bool:
    return path.is_file() and not path.is_symlink() and path.read_bytes() == content


def _delete(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


@functools.cache
def _runner_python() -> tuple[Path, ...]:
    """The runner's Python, read-only in the box: its venv (and this package when installed from a
    source folder) and its base installation, as the confined launcher mounts a reference agent's."""
    return tuple(sorted({*install_folders(sys.executable), *python_folders()}))


def _box_env(declared: dict[str, str], run_id: str, *, sandbox_root: str, home: str, tmp: str) -> dict[str, str]:
    """The command's whole environment: the declared variables over the box's own."""
    return {"HOME": home, "TMPDIR": tmp, "LANG": "C.UTF-8", "USER": "grader", "LOGNAME": "grader",
            SANDBOX_ROOT_VARIABLE: sandbox_root, **declared, RUN_MARKER: run_id}
