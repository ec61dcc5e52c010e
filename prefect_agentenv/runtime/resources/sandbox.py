"""Per-agent sandboxes: the folder an agent works in, and the host view of its sandbox paths.

Task documents and agents speak of absolute *sandbox paths* — ``/app/artifact``,
``/tmp/file_artifacts/q3.csv`` — as if each agent had a machine of its own:

* for a **local process** (kind ``"dir"``) every such path maps under the sandbox root
  (``/app/artifact/q3.png`` → ``<root>/app/artifact/q3.png``); the agent runs with the root as
  its cwd, ``HOME`` at ``<root>/home`` and ``$AGENTENV_SANDBOX_ROOT`` naming the root, so the
  reference agents map the same paths the same way;
* inside a **container** (kind ``"container"``) they are real paths; the host still reaches
  the files through the same folder, which the container mounts (see :meth:`Sandbox.mounts`).

Every path from a document or an agent goes through :meth:`Sandbox.path`, which refuses any
path that would leave the root — by ``..`` or through a symlink the agent planted.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Literal

from prefect_agentenv.exceptions import AgentEnvError
from prefect_agentenv.runtime.confinement.shadowing import shadows

logger = logging.getLogger("prefect_agentenv.runtime.resources.sandbox")

SandboxKind = Literal["dir", "container"]

STANDARD_FOLDERS: tuple[str, ...] = ("/app/artifact", "/tmp/file_artifacts")
"""Absolute sandbox folders every sandbox has from the start (agents and documents expect them)."""
HOME_FOLDER = "home"
"""Where ``HOME`` points, relative to the root: tools that write dotfiles stay inside the sandbox."""
SANDBOX_ROOT_VARIABLE = "AGENTENV_SANDBOX_ROOT"
"""The variable that tells an agent process where its absolute sandbox paths map (the launch contract)."""
RUNS_CODE_NAMES = frozenset({"conftest.py", "sitecustomize.py", "usercustomize.py", "pytest.ini", ".pytest.ini",
                             "tox.ini"})
"""Files whose mere presence changes what a test or a Python run executes (besides ``*.pth`` files, and a
``pyproject.toml`` or ``setup.cfg`` with a pytest section)."""
_CONFIG_NAMES = frozenset({"pyproject.toml", "setup.cfg"})
_PYTEST_SECTIONS = (b"[tool.pytest", b"[tool:pytest]", b"[pytest]")


class UnsafeSandboxPathError(AgentEnvError, ValueError):
    """A path would leave its sandbox (``..``, a symlink pointing outside) or is not a path at all."""


def sandbox_root() -> Path:
    """The folder absolute sandbox paths map under in this process: ``$AGENTENV_SANDBOX_ROOT``, else the cwd.

    Read from the process environment because it is the launch contract between a launcher
    and an agent process, not a setting of the package.
    """
    value = os.environ.get(SANDBOX_ROOT_VARIABLE)
    return Path(value) if value else Path.cwd()


def sandbox_path(path: str | os.PathLike[str], *, root: Path | None = None, owner: str | None = None) -> Path:
    """The host path of a sandbox path: the one mapping the host and the agents share.

    An absolute sandbox path maps under ``root`` (``/app/artifact/q3.png`` →
    ``<root>/app/artifact/q3.png``); a relative one is relative to ``root`` (an agent's cwd
    when a launcher starts it); an absolute host path already inside ``root`` is kept, because
    local agents report host paths (a trajectory file, say). Symlinks are resolved before the
    check, so one pointing outside is refused like ``..``. The answer holds at the moment of
    the call: an agent that swaps a folder for a symlink afterwards is not stopped.

    Args:
        root: the sandbox folder; :func:`sandbox_root` when omitted.
        owner: whose sandbox it is, for the error message.

    Raises:
        UnsafeSandboxPathError: the path leaves the sandbox, or contains a NUL byte.
    """
    text = os.fspath(path)
    if "\0" in text:
        raise UnsafeSandboxPathError(f"sandbox path {text!r} contains a NUL byte")
    top = (root or sandbox_root()).resolve()
    posix = PurePosixPath(text)  # sandbox paths are POSIX whatever the host is
    if posix.is_absolute() and Path(text).is_relative_to(top):
        candidate = Path(text)
    elif posix.is_absolute():
        candidate = top.joinpath(*posix.parts[1:])
    else:
        candidate = top.joinpath(*posix.parts)
    try:
        resolved = candidate.resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop: RuntimeError before Python 3.13
        raise UnsafeSandboxPathError(f"sandbox path {text!r} cannot be resolved: {exc}") from None
    if not resolved.is_relative_to(top):
        whose = f" of {owner!r}" if owner else ""
        raise UnsafeSandboxPathError(f"sandbox path {text!r} leaves the sandbox{whose}")
    return resolved


@dataclass(frozen=True)
class Sandbox:
    """One agent's sandbox: a folder on this machine that the agent sees as its filesystem.

    Attributes:
        root: the sandbox folder on the host (resolved, so symlink checks compare like with like).
        agent_name: the deployed agent it belongs to.
        kind: ``"dir"`` for a local process, ``"container"`` when a container mounts it.
    """

    root: Path
    agent_name: str
    kind: SandboxKind = "dir"
    task_files: dict[str, bytes] = field(default_factory=dict, compare=False, hash=False, repr=False)
    """The files that change what runs (:func:`runs_code`, and modules named as the grading Python's own) as the
    task loaded them, by path relative to the root: grading puts these back and removes any other
    (``runtime/confinement/grading_box.py``)."""

    def __post_init__(self) -> None:
        # Containment checks compare resolved paths, so the root must be resolved too (a sandbox
        # rebuilt from a context's string may name it through a symlinked /tmp).
        object.__setattr__(self, "root", Path(self.root).resolve())

    @property
    def home(self) -> Path:
        """The agent's ``HOME``."""
        return self.root / HOME_FOLDER

    def path(self, path: str | os.PathLike[str]) -> Path:
        """The host path of a sandbox path (see :func:`sandbox_path` for the rules).

        Raises:
            UnsafeSandboxPathError: the path leaves the sandbox, or contains a NUL byte.
        """
        return sandbox_path(path, root=self.root, owner=self.agent_name)

    def env(self) -> dict[str, str]:
        """Environment variables that put a process in this sandbox (run it with ``cwd=root``).

        In a container, absolute sandbox paths are real, so the root the agent maps under is ``/``
        and ``HOME`` is the image's own.
        """
        if self.kind == "container":
            return {SANDBOX_ROOT_VARIABLE: "/"}
        return {"HOME": str(self.home), SANDBOX_ROOT_VARIABLE: str(self.root)}

    def mounts(self) -> dict[Path, str]:
        """Host folder → container path for each standard folder, for a container sandbox."""
        return {self.path(folder): folder for folder in STANDARD_FOLDERS}

    def list_files(self, base: str = ".") -> list[str]:
        """Regular files under the sandbox folder ``base``, as sorted POSIX paths relative to it.

        Symlinks are neither listed nor followed, so an agent cannot make the run read files
        outside its sandbox. A ``base`` that does not exist (the agent made nothing) gives ``[]``.

        Raises:
            UnsafeSandboxPathError: ``base`` leaves the sandbox.
        """
        top = self.path(base)
        return _regular_files(top) if top.is_dir() else []

    def copy_in(self, files: Mapping[str, bytes] | Path, dest: str) -> list[str]:
        """Write files into the sandbox folder ``dest`` (created if needed); existing files are replaced.

        Args:
            files: file name (a relative path, may contain folders) → content, or a host folder
                whose regular files are copied with their relative paths (symlinks skipped).
            dest: sandbox folder to write into, e.g. ``/tmp/file_artifacts``.

        Returns:
            The sandbox path of every file written, in the form the agent should be told.

        Raises:
            UnsafeSandboxPathError: ``dest`` leaves the sandbox, or a file name leaves ``dest``.
        """
        sources: Mapping[str, bytes | Path]
        if isinstance(files, Path):
            sources = {name: files / name for name in _regular_files(files)}
        else:
            sources = files
        folder = self.path(dest)
        # Every name is checked before anything is written, so a bad one leaves no partial copy.
        targets = {self._target(dest, folder, name): content for name, content in sources.items()}
        for (_, host), content in targets.items():
            host.parent.mkdir(parents=True, exist_ok=True)
            with _open_no_follow(host, os.O_WRONLY | os.O_CREAT | os.O_TRUNC) as out:
                if isinstance(content, Path):
                    with content.open("rb") as source:
                        shutil.copyfileobj(source, out)
                else:
                    out.write(content)
        return [sandbox_path for sandbox_path, _ in targets]

    def _target(self, dest: str, folder: Path, name: str) -> tuple[str, Path]:
        """The sandbox path and host path of file ``name`` in ``dest`` (host ``folder``), confined to it."""
        relative = PurePosixPath(name)
        if relative.is_absolute():
            raise UnsafeSandboxPathError(f"file name {name!r} must be relative to {dest!r}")
        sandbox_path = str(PurePosixPath(dest) / relative)
        target = self.path(sandbox_path)
        if target == folder or not target.is_relative_to(folder):
            raise UnsafeSandboxPathError(f"file name {name!r} leaves the folder {dest!r}")
        return sandbox_path, target

    def note_task_files(self, written: Iterable[Path]) -> None:
        """Remember the files a step of the task wrote here that change what runs, as written."""
        for path in written:
            if (runs_code(path) or path.name in _CONFIG_NAMES or shadows(path)) and path.is_file() \
                    and not path.is_symlink():
                if path.resolve().is_relative_to(self.root):
                    self.task_files[path.resolve().relative_to(self.root).as_posix()] = path.read_bytes()

    def read(self, path: str) -> bytes:
        """The bytes of the sandbox file ``path``.

        Raises:
            UnsafeSandboxPathError: the path leaves the sandbox.
            FileNotFoundError: there is no such file.
            IsADirectoryError: the path is a folder.
        """
        with _open_no_follow(self.path(path), os.O_RDONLY) as source:
            return source.read()

    def clear(self) -> None:
        """Empty the folder and rebuild its standard layout, keeping the root itself.

        A pooled agent runs with this folder as its working directory, so the next task run
        gets a fresh folder at the same path instead of a new one. The top folders of the layout
        (``app``, ``tmp``, ``home``) are emptied, not removed: a confined agent sees each one through
        a mount that must keep pointing at it. Inside them, folders that were empty already are kept:
        they may be the mount points of the agent's install folders (a venv under ``/tmp`` is mounted
        at its own path inside the agent's ``/tmp``), and removing one would unmount it under the
        running agent.
        """
        self.task_files.clear()
        keep = {HOME_FOLDER, *(PurePosixPath(folder).parts[1] for folder in STANDARD_FOLDERS)}
        for child in list(self.root.iterdir()):
            if child.name in keep and child.is_dir() and not child.is_symlink():
                _empty_keeping_mount_points(child)
            else:
                _remove(child)
        self.home.mkdir(exist_ok=True)
        for folder in STANDARD_FOLDERS:
            self.path(folder).mkdir(parents=True, exist_ok=True)

    def remove(self) -> bool:
        """Delete the sandbox folder, best effort; True when it is gone.

        Called at teardown unless the run keeps its sandboxes. Folders the agent made read-only
        are made writable again and the removal retried; what still fails is logged, not raised,
        because teardown must go on.
        """
        if not self.root.exists():
            return True
        try:
            shutil.rmtree(self.root)
        except OSError:
            _make_writable(self.root)
            shutil.rmtree(self.root, ignore_errors=True)
        if self.root.exists():
            logger.warning("could not remove the sandbox of %s at %s", self.agent_name, self.root)
            return False
        return True


def create_sandbox(run_workdir: Path, agent_name: str, *, kind: SandboxKind = "dir") -> Sandbox:
    """A fresh sandbox for ``agent_name`` under ``<run_workdir>/sandboxes/``.

    The folder is ``<agent_name>-<short id>`` (so an agent deployed twice, or two runs sharing a
    folder, never share a sandbox) with ``home/`` and the standard folders already there.
    """
    parent = Path(run_workdir) / "sandboxes"
    parent.mkdir(parents=True, exist_ok=True)
    root = (parent / f"{_folder_name(agent_name)}-{uuid.uuid4().hex[:8]}").resolve()
    root.mkdir()
    sandbox = Sandbox(root=root, agent_name=agent_name, kind=kind)
    sandbox.home.mkdir()
    for folder in STANDARD_FOLDERS:
        sandbox.path(folder).mkdir(parents=True)
    return sandbox


def runs_code(path: Path) -> bool:
    """Whether a file's presence changes what a test run or a Python start executes: a ``conftest.py``,
    ``sitecustomize.py``, a ``.pth``, a pytest configuration (a link by such a name counts, unread)."""
    name = path.name
    if name in RUNS_CODE_NAMES or name.endswith(".pth"):
        return True
    if name not in _CONFIG_NAMES:
        return False
    if path.is_symlink():
        return True
    try:
        return path.is_file() and any(section in path.read_bytes() for section in _PYTEST_SECTIONS)
    except OSError:
        return False


def _folder_name(agent_name: str) -> str:
    """``agent_name`` as one safe path segment (it comes from a task document)."""
    cleaned = "".join(c if c.isalnum() or c in "-_." else "-" for c in agent_name).strip(".-")
    return cleaned[:64] or "agent"


def _regular_files(top: Path) -> list[str]:
    """Regular files under a folder as sorted relative POSIX paths; symlinks neither listed nor followed."""
    found: list[str] = []
    pending = [top]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=False):
                    found.append(Path(entry.path).relative_to(top).as_posix())
    return sorted(found)


def _open_no_follow(path: Path, flags: int) -> BinaryIO:
    """Open without following a final symlink: one planted after :meth:`Sandbox.path` checked is refused."""
    fd = os.open(path, flags | getattr(os, "O_NOFOLLOW", 0), 0o644)
    return os.fdopen(fd, "wb" if flags & os.O_WRONLY else "rb")


def _empty_keeping_mount_points(folder: Path) -> bool:
    """Remove what ``folder`` holds, except folders that were empty (and the folders that lead to
    them); True when something in it was kept."""
    kept = False
    for inner in list(folder.iterdir()):
        if inner.is_dir() and not inner.is_symlink():
            if inner.is_mount() or not any(inner.iterdir()) or _empty_keeping_mount_points(inner):
                kept = True
                continue
        _remove(inner)
    return kept


def _remove(path: Path) -> None:
    """Delete a file or a folder tree (never through a symlink), making folders writable if it must."""
    if not path.is_dir() or path.is_symlink():
        path.unlink(missing_ok=True)
        return
    try:
        shutil.rmtree(path)
    except OSError:
        _make_writable(path)
        shutil.rmtree(path, ignore_errors=True)


def _make_writable(root: Path) -> None:
    """Give the owner rwx on every folder (never through symlinks), so rmtree can empty them."""
    for folder, subfolders, _ in os.walk(root):
        for name in [folder, *(os.path.join(folder, s) for s in subfolders)]:
            try:
                if not os.path.islink(name):
                    os.chmod(name, os.stat(name).st_mode | stat.S_IRWXU)
            except OSError:
                pass  # best effort: rmtree reports what is left
