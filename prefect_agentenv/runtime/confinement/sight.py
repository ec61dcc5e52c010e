"""What a confined server sees of the host besides its sandbox and the system, and why (docs/security.md, "Its
own code"): what its command line needs (``command_needs``), its ``install_paths``, and this package when it runs
on the runner's own venv. A command that would still not find an executable or interpreter it runs fails here,
before it starts, in one line naming the file, the chain that led there and the ``--install-path`` that fixes it.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from prefect_agentenv.exceptions import DeployError
from prefect_agentenv.runtime.confinement.bwrap import SYSTEM_DIRS
from prefect_agentenv.runtime.confinement.command_needs import command_needs, not_visible, protected_folders
from prefect_agentenv.settings import get_settings

PACKAGE = Path(__file__).resolve().parents[2]
"""This package's folder: a reference agent runs from it (an editable install keeps it outside its venv)."""


@dataclass(frozen=True)
class Sight:
    """What one confined command sees read-only, and the record of why."""

    program: str
    """Its executable as an absolute host path (the same path inside); a shim replaced by what it runs."""
    read_only: tuple[Path, ...]
    """Host folders and files visible read-only at their own paths (none under another, none of the system)."""
    path_first: tuple[Path, ...]
    """Folders of the executables it names bare, first on its PATH (a shim's real interpreter's)."""
    aliases: tuple[tuple[Path, str], ...]
    """(real path, the path the command names it by) pairs: read-only at the latter too (a symlinked venv)."""
    mounts: tuple[str, ...]
    """Each mount with why (``~/.pyenv/versions/3.12.1 (installation of …)``): ``agent check`` prints them."""


def sight(name: str, argv: Sequence[str], *, install_paths: Sequence[str], root: Path, path: str,
          hint: str) -> Sight:
    """What ``argv`` (filled in) sees when it runs confined with its sandbox at ``root``.

    Raises:
        DeployError: an install path would show the sandbox, or something the command runs would not be visible
            inside (one line: the file, the chain, the fix; ``hint`` says how to opt out).
    """
    needs = command_needs(argv, path=path, protected=protected_folders(root, get_settings().home.resolve()))
    program = needs.program or _program(name, argv[0], path)
    given = [Path(os.path.realpath(p)) for p in install_paths]
    for folder in given:
        if root.is_relative_to(folder):
            raise DeployError(f"install path {folder} holds the agent's own sandbox (and the run's folder): name the "
                              "server's own folder instead")
    mounts = [m.render() for m in needs.mounts] + [f"{folder} (install_paths)" for folder in given]
    found = [m.path for m in needs.mounts] + given
    if _runs_on_runner_venv(program) and not any(PACKAGE.is_relative_to(f) for f in found):
        found.append(PACKAGE)
        mounts.append(f"{PACKAGE} (this package: it runs on the runner's own venv)")
    missing = not_visible(needs, found)
    if missing:
        raise DeployError(f"{name!r} cannot run confined: {missing[0].render()}; `prefect-agentenv agent check "
                          f"{name}` lists what it sees; or {hint}")
    aliases = tuple((real, str(named)) for named, real in needs.aliases.items()
                    if real.exists() and not any(named.is_relative_to(f) for f in found))
    mounts += [f"{named} (the same as {real})" for real, named in aliases]
    return Sight(program=program, read_only=tuple(_outermost(found)), path_first=tuple(needs.path_folders),
                 aliases=aliases, mounts=tuple(mounts))


def _program(name: str, program: str, path: str) -> str:
    """The command's executable as an absolute host path (the same path inside, where it is mounted)."""
    if os.sep in program:
        return program
    found = shutil.which(program, path=path)
    if found is None:
        raise DeployError(f"{name!r}: cannot run {program!r}: not found on PATH ({path})")
    return found


def _runs_on_runner_venv(program: str) -> bool:
    venv = Path(program).parent.parent
    return (venv / "pyvenv.cfg").is_file() and venv.resolve() == Path(sys.prefix).resolve()


def _outermost(paths: Sequence[Path]) -> list[Path]:
    """Each existing path once, none under another or under the system (bwrap mounts the outer one)."""
    kept: list[Path] = []
    for path in sorted({Path(os.path.realpath(p)) for p in paths}, key=lambda p: len(p.parts)):
        if path.exists() and not any(path.is_relative_to(other) for other in [*map(Path, SYSTEM_DIRS), *kept]):
            kept.append(path)
    return kept
