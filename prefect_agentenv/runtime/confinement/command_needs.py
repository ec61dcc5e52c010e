"""What a confined command needs to see, found from the command itself (docs/security.md, "Its own code").

A user registers an agent by the line that starts it; they should not have to know which folders that line
reaches. From the argv (and the string of an ``sh -c`` / ``bash -c``, split as the shell would), this finds:

* every executable it runs, resolved on the PATH when named bare, and its ``#!`` chain: a console script →
  its venv's Python → ``pyvenv.cfg``'s ``home`` → the base installation, wherever it lives (pyenv, uv, conda,
  ``~/.local``); ``#!/usr/bin/env node`` → the ``node`` on the PATH → its installation; a pyenv shim → the
  interpreter pyenv picks for it (a shim cannot run inside: it needs pyenv's own state);
* the venv of each Python, and the folders its ``.pth`` files and editable installs name;
* every absolute path on the command line that exists (a script: its folder; a folder: itself).

Each becomes a read-only mount at its own path, with why (``agent check`` prints them). A folder that would show
too much (``/``, a home folder, ``/tmp`` itself, one holding the agent's sandbox or the runner's working folder)
is never mounted on its own: a script there is mounted alone, and an interpreter there is a
:class:`MissingNeed` that names the ``--install-path`` that would show it. ``install_paths`` remain for what no
command line shows (a configuration that names a data folder).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prefect_agentenv.runtime.confinement.bwrap import SYSTEM_DIRS

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ash", "ksh"})
NEVER_MOUNTED = frozenset({"proc", "sys", "dev", "run", "etc", "boot", "var", "lost+found"})
"""Top folders a path on a command line never brings in: the kernel's, the host's configuration and state (a
confined process has its own ``/proc`` and ``/dev``, and the few files of ``/etc`` it needs)."""
SANDBOX_TOPS = frozenset({"app", "tmp", "home", "sandbox"})
"""Top folders every confined command has from its own sandbox."""
_PREFIXES = frozenset({"exec", "env", "nohup", "command", "nice", "time", "setsid", "stdbuf"})
_SHELL_PUNCTUATION = ";&|()<>"
_SHIM_TIMEOUT = 10.0
_PIP_EXEC = re.compile(rb"^'''exec' (\S+)", re.M)
_EDITABLE_PATHS = re.compile(r"['\"](/[^'\"]+)['\"]")


@dataclass(frozen=True)
class Mount:
    """A host file or folder a confined command sees read-only at the same path, and why."""

    path: Path
    why: str

    def render(self) -> str:
        return f"{self.path} ({self.why})"


@dataclass(frozen=True)
class MissingNeed:
    """Something the command runs that it would not find inside: which file, the chain that led to it, the fix."""

    chain: tuple[str, ...]
    """``<venv>/bin/dummy-a2a``, ``#!<venv>/bin/python3.12``, ``~/.pyenv/versions/3.12.1`` ..."""
    reason: str
    fix: str | None = None
    """The folder that would show it (``--install-path`` it), when one would."""

    def render(self) -> str:
        fix = f"; add --install-path {self.fix} (install_paths on its block)" if self.fix else ""
        return f"{' → '.join(self.chain)} {self.reason}{fix}"


@dataclass
class Needs:
    """What a command needs to see: mounts (each once, the widest first), the PATH folders of the executables
    it names bare, the interpreter a shim stands for, what cannot be shown."""

    mounts: list[Mount] = field(default_factory=list)
    path_folders: list[Path] = field(default_factory=list)
    """Folders of executables named bare (or through a shim), first on the confined PATH."""
    aliases: dict[Path, Path] = field(default_factory=dict)
    """A mounted path as the command names it → the real path it links to: mounted at the named path too, so a
    venv reached through a symlink is found where the command looks."""
    program: str | None = None
    """The command's own executable as an absolute host path, a shim replaced by what it stands for."""
    missing: list[MissingNeed] = field(default_factory=list)
    executables: list[tuple[Path, tuple[str, ...]]] = field(default_factory=list)
    """Every executable of the command's chains, with its chain (checked to be visible before start)."""


@dataclass
class _Finder:
    path: str
    """The PATH bare names are looked up on."""
    protected: tuple[Path, ...]
    """Folders never shown whole: a folder holding one of these is too wide."""
    needs: Needs = field(default_factory=Needs)
    _seen: set[Path] = field(default_factory=set)

    def mount(self, path: Path, why: str) -> None:
        real = Path(os.path.realpath(path))
        named = Path(os.path.abspath(path))
        if named != real and not _system(named) and not _system(real):
            self.needs.aliases[named] = real
        if _system(real) or any(_within(real, m.path) for m in self.needs.mounts):
            return
        self.needs.mounts = [m for m in self.needs.mounts if not _within(m.path, real)]
        self.needs.mounts.append(Mount(real, why))

    def too_wide(self, folder: Path) -> bool:
        real = Path(os.path.realpath(folder))
        return real == Path("/") or any(_within(p, real) for p in self.protected)

    def file_or_folder(self, file: Path, why: str) -> None:
        """A file's folder (its siblings are its modules), or the file alone where the folder shows too much."""
        real = Path(os.path.realpath(file))
        self.mount(real if self.too_wide(real.parent) else real.parent, why)


def protected_folders(*extra: Path) -> tuple[Path, ...]:
    """Folders whose holder is never mounted whole: the user's home, ``/home``, ``/root``, ``/tmp``, the runner's
    working folder, and ``extra`` (the agent's sandbox, the agentenv home)."""
    found = [Path.home(), Path("/home"), Path("/root"), Path("/tmp"), Path.cwd(), *extra]
    return tuple(Path(os.path.realpath(p)) for p in found)


def command_needs(argv: Sequence[str], *, path: str, protected: Sequence[Path] = ()) -> Needs:
    """What ``argv`` needs to see when it runs confined (see the module docstring)."""
    finder = _Finder(path=path, protected=tuple(protected) or protected_folders())
    if not argv:
        return finder.needs
    first = _executable_named(finder, argv[0], ())
    finder.needs.program = str(first) if first is not None else None
    words = list(argv[1:])
    if Path(argv[0]).name in SHELLS and "-c" in words[:-1]:
        script = words[words.index("-c") + 1]
        _shell_string(finder, script)
        words = [w for w in words if w != script]
    for word in words:
        _path_word(finder, word)
    return finder.needs


def _executable_named(finder: _Finder, name: str, chain: tuple[str, ...]) -> Path | None:
    """An executable as a command names it: bare on the PATH (its folder put first on the confined PATH), or a
    path; then its chain."""
    if os.sep not in name:
        found = shutil.which(name, path=finder.path)
        if found is None:
            return None
        real = _unshimmed(finder, Path(found))
        folder = Path(os.path.realpath(real)).parent if real != Path(found) else Path(found).parent
        if not _system(folder) and folder not in finder.needs.path_folders:
            finder.needs.path_folders.append(real.parent)
        executable = real
    else:
        if not os.path.isabs(name):
            return None  # relative to where it starts (its sandbox): nothing of the host's
        executable = _unshimmed(finder, Path(name))
    _chain(finder, executable, (*chain, str(executable)))
    return executable


def _chain(finder: _Finder, executable: Path, chain: tuple[str, ...]) -> None:
    """One executable and what it runs in turn: its venv, its ``#!`` interpreter, its installation."""
    if executable in finder._seen:
        return
    finder._seen.add(executable)
    finder.needs.executables.append((executable, chain))
    if not executable.exists():
        if not _in_sandbox(executable):
            finder.needs.missing.append(MissingNeed(chain, "does not exist on this machine"))
        return
    head = _head(executable)
    interpreter = _interpreter(finder, head)
    if interpreter is not None:
        if not _system(executable):
            _script(finder, executable, chain)
        _chain(finder, interpreter, (*chain, f"#!{interpreter}"))
    elif head.startswith(b"\x7fELF"):
        _binary(finder, executable, chain)
    elif not _system(executable):
        finder.file_or_folder(executable, f"run by {chain[0]}")
    venv = _venv_of(executable)
    if venv is not None:
        _venv(finder, venv, chain)


def _script(finder: _Finder, script: Path, chain: tuple[str, ...]) -> None:
    """A script's code: a node package's tree (its ``node_modules`` folder, where its dependencies are too), else
    its folder (or itself alone where the folder shows too much); a venv's console script is in its venv."""
    if _venv_of(script) is not None:
        return
    real = Path(os.path.realpath(script))
    parts = real.parts
    if "node_modules" in parts:
        top = Path(*parts[: parts.index("node_modules") + 1])
        finder.mount(top, f"node packages of {chain[0]}")
        return
    finder.file_or_folder(real, f"script {' → '.join(chain)}")


def _binary(finder: _Finder, executable: Path, chain: tuple[str, ...]) -> None:
    """A native executable outside the system: its installation (``<prefix>/bin/x`` with ``<prefix>/lib``: a
    Python's, node's), else its folder; a prefix that shows too much is a missing need naming it."""
    real = Path(os.path.realpath(executable))
    if _system(real):
        return
    prefix = real.parent.parent
    if real.parent.name == "bin" and (prefix / "lib").is_dir():
        if finder.too_wide(prefix):
            finder.needs.missing.append(MissingNeed((*chain, str(prefix)),
                                                    "is an installation in a folder never shown whole", str(prefix)))
            return
        finder.mount(prefix, f"installation of {' → '.join(chain)}")
    else:
        finder.file_or_folder(real, f"executable {' → '.join(chain)}")


def _venv(finder: _Finder, venv: Path, chain: tuple[str, ...]) -> None:
    """A venv: itself, its base Python (``pyvenv.cfg``'s ``home``), and the folders its ``.pth`` files and
    editable installs name."""
    if finder.too_wide(venv):
        finder.needs.missing.append(MissingNeed((*chain, str(venv)), "is a venv in a folder never shown whole",
                                                str(venv)))
        return
    finder.mount(venv, f"venv of {chain[0]}")
    home = _pyvenv_home(venv)
    if home is not None:
        base = Path(os.path.realpath(home))
        python = next((base / name for name in ("python3", "python") if (base / name).exists()), None)
        link = (*chain, f"{venv}/pyvenv.cfg home {home}")
        if python is None:
            finder.needs.missing.append(MissingNeed(link, "holds no Python on this machine"))
        else:
            _chain(finder, python, link)
    named: list[Path] = []
    for folder, why in sorted(_named_by_venv(venv), key=lambda item: len(str(item[0]))):
        if any(_within(folder, other) for other in named) or not folder.is_dir() or finder.too_wide(folder):
            continue  # an editable install's finder names each subpackage of a folder already mounted
        named.append(folder)
        finder.mount(folder, f"{why} of venv {venv}")


def _named_by_venv(venv: Path) -> list[tuple[Path, str]]:
    """Folders a venv's ``site-packages`` names: ``.pth`` lines (a ``pip install -e``), editable finders'
    mappings."""
    found: list[tuple[Path, str]] = []
    for site in venv.glob("lib/python*/site-packages"):
        try:
            names = [entry.name for entry in os.scandir(site)]  # one pass: a venv can hold thousands of entries
        except OSError:
            continue
        for name in names:
            if name.endswith(".pth"):
                found += [(Path(line.strip()), name) for line in _text(site / name).splitlines()
                          if line.startswith("/")]
            elif name.startswith("__editable__") and name.endswith("finder.py"):
                found += [(Path(p).parent if p.endswith(".py") else Path(p), name)
                          for p in _EDITABLE_PATHS.findall(_text(site / name))]
    return found


def _shell_string(finder: _Finder, script: str) -> None:
    """An ``sh -c`` string, split as the shell would: each simple command's executable (after assignments and
    ``exec``/``env``) and every absolute path word."""
    try:
        lexer = shlex.shlex(script, posix=True, punctuation_chars=_SHELL_PUNCTUATION)
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        tokens = script.split()
    at_start = True
    for token in tokens:
        if token and all(ch in _SHELL_PUNCTUATION for ch in token):
            at_start = at_start or not set(token) <= set("<>")  # after a redirection comes its file
            continue
        if at_start and (_assignment(token) or token in _PREFIXES):
            _path_word(finder, token)
            continue
        if at_start:
            at_start = False
            if _executable_named(finder, token, ()) is not None:
                continue
        _path_word(finder, token)


def _assignment(token: str) -> bool:
    name, sep, _ = token.partition("=")
    return bool(sep) and name.isidentifier()


def _path_word(finder: _Finder, word: str) -> None:
    """An argument that is (or ends in, after ``=``) an absolute path on this machine: a file's folder, or the
    folder; paths that do not exist (yet) are the command's business."""
    value = word.split("=", 1)[1] if "=" in word and not word.startswith("/") else word
    if not value.startswith("/") or value == "/":
        return
    candidate = Path(value)
    real = Path(os.path.realpath(candidate))
    if not candidate.exists() or _system(real) or (len(real.parts) > 1 and real.parts[1] in NEVER_MOUNTED):
        return
    if candidate.is_dir():
        if not finder.too_wide(candidate):
            finder.mount(candidate, f"named on its command line ({word})")
        return
    venv = _venv_of(candidate)
    if venv is not None:
        _venv(finder, venv, (str(candidate),))
    if os.access(candidate, os.X_OK) and _interpreter(finder, _head(candidate)) is not None:
        _chain(finder, candidate, (str(candidate),))
    else:
        finder.file_or_folder(candidate, f"named on its command line ({word})")


def _interpreter(finder: _Finder, head: bytes) -> Path | None:
    """The interpreter a script's ``#!`` names (``/usr/bin/env X`` looked up on the PATH; pip's ``'''exec'``
    form for long paths), or None."""
    if not head.startswith(b"#!"):
        return None
    pip_exec = _PIP_EXEC.search(head)
    if pip_exec is not None:
        return Path(pip_exec.group(1).decode(errors="replace"))
    words = head[2:].split(b"\n", 1)[0].decode(errors="replace").split()
    if not words:
        return None
    if Path(words[0]).name == "env":
        names = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        found = shutil.which(names[0], path=finder.path) if names else None
        return _unshimmed(finder, Path(found)) if found else None
    return Path(words[0])


def _unshimmed(finder: _Finder, executable: Path) -> Path:
    """The interpreter a pyenv shim stands for (what ``pyenv which`` answers), else the executable itself."""
    if executable.parent.name != "shims" or b"pyenv" not in _head(executable, 4096):
        return executable
    root = executable.parent.parent
    pyenv = next((p for p in (root / "libexec" / "pyenv", root / "bin" / "pyenv") if p.exists()), None)
    if pyenv is None:
        return executable
    try:
        done = subprocess.run([str(pyenv), "which", executable.name], capture_output=True, text=True,
                              timeout=_SHIM_TIMEOUT, env={**os.environ, "PYENV_ROOT": str(root)},
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return executable
    answer = done.stdout.strip()
    return Path(answer) if done.returncode == 0 and answer.startswith("/") else executable


def _venv_of(executable: Path) -> Path | None:
    """The venv an executable sits in (``<venv>/bin/x`` beside ``<venv>/pyvenv.cfg``), as named, not resolved."""
    venv = executable.parent.parent
    return venv if executable.parent.name == "bin" and (venv / "pyvenv.cfg").is_file() else None


def _pyvenv_home(venv: Path) -> str | None:
    for line in _text(venv / "pyvenv.cfg").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == "home":
            return value.strip()
    return None


def _head(path: Path, size: int = 512) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read(size)
    except OSError:
        return b""


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _in_sandbox(path: Path) -> bool:
    """A path missing on the host that a confined command may find in its own sandbox (``/app/run.sh``): under one
    of its top folders, and in no folder the host has there (``/tmp/venv/bin/python3.99`` is the host's)."""
    if not path.is_absolute() or len(path.parts) < 2 or path.parts[1] not in SANDBOX_TOPS:
        return False
    existing = next(parent for parent in path.parents if parent.exists())
    return len(existing.parts) <= 2


def _system(path: Path) -> bool:
    """Under a folder every confined process sees anyway."""
    return any(_within(path, Path(folder)) for folder in SYSTEM_DIRS)


def _within(path: Path, folder: Path) -> bool:
    """``path.is_relative_to(folder)`` for absolute paths, without pathlib's parsing (it runs per mount per need)."""
    text, top = str(path), str(folder)
    return text == top or text.startswith(top if top.endswith("/") else top + "/")


def not_visible(needs: Needs, visible: Sequence[Path]) -> list[MissingNeed]:
    """The command's missing needs, and each executable of its chains that none of ``visible`` (its mounts, its
    ``install_paths``) nor the system shows."""
    missing = list(needs.missing)
    for executable, chain in needs.executables:
        real = Path(os.path.realpath(executable))
        if any(need.chain[: len(chain)] == chain for need in missing) or _system(real) or not executable.exists():
            continue
        if not any(real.is_relative_to(folder) for folder in visible):
            missing.append(MissingNeed(chain, "is not visible inside", str(real.parent)))
    return missing


def resolve_at_registration(argv: Sequence[str], *, cwd: Path, path: str) -> tuple[list[str], list[str]]:
    """A command line as it will run from anywhere: its executable, named bare and found outside the system on
    ``path``, by its absolute path (a pyenv shim by the interpreter it stands for: a shim cannot run confined);
    each argument naming a file relative to ``cwd`` by its absolute path. Returns the argv and one note per
    change (``python → ~/.pyenv/versions/3.12.1/bin/python3.12 (what the pyenv shim ... runs here)``).

    Templates (``{port}``), options and what an ``sh -c`` string holds are left as written.
    """
    resolved, notes = list(argv), []
    if resolved and "{" not in resolved[0]:
        first = resolved[0]
        found = shutil.which(first, path=path) if os.sep not in first else str((cwd / first).absolute())
        if found is not None and (os.sep in first or not _system(Path(found))):
            real = _unshimmed(_Finder(path=path, protected=()), Path(found))
            resolved[0] = str(real)
            shim = f" (what the pyenv shim {found} runs here)" if real != Path(found) else ""
            notes.append(f"{first} → {real}{shim}")
    for index, word in enumerate(resolved[1:], start=1):
        if word.startswith("-") or "{" in word or os.path.isabs(word) or "=" in word:
            continue
        if resolved[index - 1] in ("-m", "-c"):
            continue
        candidate = cwd / word
        if candidate.is_file():
            resolved[index] = str(candidate.absolute())
            notes.append(f"{word} → {resolved[index]}")
    return resolved, notes
