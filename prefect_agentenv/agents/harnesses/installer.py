"""``agent install``: a harness into a folder of its own, from PyPI and npm only, pinned and idempotent.

Per harness, in ``<harness dir>/<name>/`` (see :mod:`.installed` for the layout):

1. ``venv/`` — a venv (uv's, or ``python -m venv`` without uv) with the harness's lock file
   (``locks/<name>.txt``: every package pinned) and ``agentenv-framework`` at its pinned version,
   installed without dependencies: only its wrapper folder is used, copied to ``app/``;
2. ``node/`` — Node from the npm registry's ``node-<os>-<cpu>`` package, when the system's is
   older than the CLI needs;
3. ``npm/`` — the CLI by ``npm ci --ignore-scripts`` from the wrapper's lockfile (or the one
   shipped here), then the CLI's own postinstall that links its native build, and the other
   platforms' builds pruned;
4. ``bin/`` — links to the commands the wrapper runs; ``manifest.json`` last.

A folder whose manifest has the current fingerprint is left as it is ("present"). Anything else
is removed and installed again. A file lock per harness keeps two installs (two shells, two test
workers) from building the same folder at once. Every command's output goes to ``install.log``.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import shutil
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from prefect_agentenv.agents.harnesses import toolchain
from prefect_agentenv.agents.harnesses.catalog import (
    ALIASES_IN_WHEEL,
    HARNESSES,
    LOCKS,
    NODE_VERSION,
    NPM_LOCKS,
    WRAPPERS_IN_WHEEL,
    Harness,
)
from prefect_agentenv.agents.harnesses.installed import (
    MANIFEST,
    HarnessManifest,
    fingerprint,
    framework_requirement,
    harnesses_dir,
    read_manifest,
)
from prefect_agentenv.exceptions import InstallError
from prefect_agentenv.runtime.launch.command import run_bounded

logger = logging.getLogger("prefect_agentenv.harnesses")

COMMAND_TIMEOUT_SECONDS = 900.0
"""One npm or uv command; the largest (OpenHands' 500 MB venv) takes ~15 s from a warm cache."""
_LOG_TAIL = 3000

Status = Literal["installed", "present", "failed"]


@dataclass(frozen=True)
class InstallOutcome:
    """How one harness install ended."""

    name: str
    status: Status
    seconds: float
    folder: Path
    manifest: HarnessManifest | None = None
    error: str | None = None


async def install_harnesses(names: list[str], *, root: Path | None = None, force: bool = False) -> list[InstallOutcome]:
    """Install ``names`` at once, each into its own folder; one failing does not stop the others.

    Raises:
        InstallError: a name is not a harness this package knows.
    """
    unknown = [name for name in names if name not in HARNESSES]
    if unknown:
        raise InstallError(f"no harness called {', '.join(map(repr, unknown))}: known are {', '.join(HARNESSES)}")
    base = root or harnesses_dir()
    base.mkdir(parents=True, exist_ok=True)
    return list(await asyncio.gather(*(install_one(HARNESSES[name], base, force=force) for name in names)))


async def install_one(harness: Harness, root: Path, *, force: bool = False) -> InstallOutcome:
    """Install ``harness`` under ``root`` unless it is already there as pinned (see the module docstring)."""
    folder = root / harness.name
    started = time.monotonic()
    root.mkdir(parents=True, exist_ok=True)
    async with _locked(root / f".{harness.name}.lock"):
        present = read_manifest(folder)
        if not force and present is not None and present.fingerprint == fingerprint(harness) and _complete(harness, folder):
            return InstallOutcome(harness.name, "present", time.monotonic() - started, folder, present)
        try:
            manifest = await _install(harness, folder, started)
        except InstallError as exc:
            return InstallOutcome(harness.name, "failed", time.monotonic() - started, folder, error=str(exc))
    return InstallOutcome(harness.name, "installed", time.monotonic() - started, folder, manifest)


class _locked:
    """An exclusive lock on a file, taken in a thread so the other installs go on meanwhile."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.handle: int | None = None

    async def __aenter__(self) -> None:
        self.handle = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        await asyncio.to_thread(fcntl.flock, self.handle, fcntl.LOCK_EX)

    async def __aexit__(self, *exc: object) -> None:
        assert self.handle is not None
        fcntl.flock(self.handle, fcntl.LOCK_UN)
        os.close(self.handle)


def _complete(harness: Harness, folder: Path) -> bool:
    """Whether everything the manifest promises is still on disk (nobody deleted a part)."""
    paths = [folder / "venv" / "bin" / "python", folder / "app" / "a2a_server.py",
             *(folder / "bin" / name for name in harness.bins)]
    return all(path.exists() for path in paths)


async def _install(harness: Harness, folder: Path, started: float) -> HarnessManifest:
    """Build the folder from nothing, the manifest last."""
    if folder.exists():
        shutil.rmtree(folder)
    (folder / "bin").mkdir(parents=True)
    log = folder / "install.log"
    python = await _venv(harness, folder, log)
    _copy_wrapper(harness, folder)
    node = await _node(harness, folder, log)
    if harness.cli is not None:
        await _npm_cli(harness, folder, log)
    _link_bins(harness, folder)
    cli_version = await _cli_version(harness, folder, log)
    manifest = HarnessManifest(
        name=harness.name, title=harness.title, framework=framework_requirement(),
        cli=f"{harness.cli.package}@{harness.cli.version}" if harness.cli else None, cli_version=cli_version,
        sdk=_locked_versions(harness), python=".".join(map(str, python.version)), node=node,
        aliases=_aliases(folder, harness), missing_tools=_missing_tools(harness, folder),
        fingerprint=fingerprint(harness), install_seconds=round(time.monotonic() - started, 1))
    partial = folder / f".{MANIFEST}.partial"
    partial.write_text(manifest.model_dump_json(indent=2), encoding="utf-8")
    partial.replace(folder / MANIFEST)
    return manifest


async def _run(argv: list[str], *, log: Path, cwd: Path, what: str, env: dict[str, str] | None = None) -> str:
    """Run one install command, its output appended to the log.

    Raises:
        InstallError: it failed; the message names ``what`` and ends with the command's last output.
    """
    child_env = {**os.environ, "npm_config_update_notifier": "false", "npm_config_fund": "false",
                 "npm_config_audit": "false", "UV_PYTHON_DOWNLOADS": "never", **(env or {})}
    try:
        result = await run_bounded(argv, cwd=cwd, env=child_env, timeout=COMMAND_TIMEOUT_SECONDS, merge_stderr=True)
    except OSError as exc:
        raise InstallError(f"{what}: cannot run {argv[0]}: {exc}") from exc
    output = result.stdout.decode(errors="replace")
    with log.open("a", encoding="utf-8") as out:
        out.write(f"$ {' '.join(argv)}\n{output}\n")
    if result.timed_out:
        raise InstallError(f"{what}: {argv[0]} did not finish within {COMMAND_TIMEOUT_SECONDS:g}s (log: {log})")
    if result.returncode != 0:
        raise InstallError(f"{what} failed (exit {result.returncode}); the registry's answer, from {log}:\n"
                           f"{output[-_LOG_TAIL:].strip()}")
    return output


async def _venv(harness: Harness, folder: Path, log: Path) -> toolchain.Python:
    """The harness's venv with its pinned packages and the pinned AgentEnv package (no dependencies)."""
    python = toolchain.python_at_least(harness.min_python)
    venv, lock = folder / "venv", LOCKS / f"{harness.name}.txt"
    packages = ["--no-deps", "-r", str(lock), framework_requirement()]
    what = f"installing {harness.title}'s Python packages ({lock.name}, {framework_requirement()}) from PyPI"
    uv = toolchain.uv_binary()
    if uv is not None:
        await _run([uv, "venv", "--quiet", "--python", python.executable, str(venv)], log=log, cwd=folder,
                   what=f"creating {harness.title}'s venv")
        await _run([uv, "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), *packages],
                   log=log, cwd=folder, what=what)
    else:
        await _run([python.executable, "-m", "venv", str(venv)], log=log, cwd=folder,
                   what=f"creating {harness.title}'s venv")
        await _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", *packages], log=log,
                   cwd=folder, what=what)
    return python


def _site_packages(folder: Path) -> Path:
    found = sorted((folder / "venv" / "lib").glob("python3*/site-packages"))
    if not found:
        raise InstallError(f"the venv at {folder / 'venv'} has no site-packages")
    return found[0]


def _copy_wrapper(harness: Harness, folder: Path) -> None:
    """The wrapper folder of the installed AgentEnv package, as ``app/`` (what its image copies to /opt/agent)."""
    source = _site_packages(folder) / WRAPPERS_IN_WHEEL / harness.name
    if not (source / "a2a_server.py").is_file():
        raise InstallError(f"{framework_requirement()} has no wrapper folder {WRAPPERS_IN_WHEEL}{harness.name}")
    shutil.copytree(source, folder / "app", ignore=shutil.ignore_patterns("__pycache__"))


def _aliases(folder: Path, harness: Harness) -> list[str]:
    """The aliases the framework's ``aliases.toml`` gives this harness (other than its own name)."""
    path = _site_packages(folder) / ALIASES_IN_WHEEL
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8")).get("agents", {})
    except (OSError, ValueError):
        return []
    names = table.get(harness.name, [])
    return sorted(str(n) for n in names if isinstance(n, str) and n != harness.name)


async def _node(harness: Harness, folder: Path, log: Path) -> str | None:
    """The Node the CLI runs on: the system's when new enough, else the registry's build in ``node/``."""
    if harness.min_node is None:
        return None
    wanted = toolchain.version_tuple(harness.min_node)
    system = toolchain.system_node()
    if system is not None and wanted is not None and system[1] >= wanted:
        return "system " + ".".join(map(str, system[1]))
    package = f"{toolchain.registry_node_package()}@{NODE_VERSION}"
    (folder / "node").mkdir()
    await _run([toolchain.npm_binary(), "install", "--prefix", str(folder / "node"), "--no-save", "--ignore-scripts",
                "--loglevel=error", package], log=log, cwd=folder / "node",
               what=f"installing Node {NODE_VERSION} ({package}) from the npm registry for {harness.title}")
    binary = folder / "node" / "node_modules" / package.split("@")[0] / "bin" / "node"
    if not binary.is_file():
        raise InstallError(f"{package} from the npm registry has no bin/node")
    (folder / "bin" / "node").symlink_to(binary)
    return f"registry {NODE_VERSION}"


def _harness_path(folder: Path) -> dict[str, str]:
    """PATH with the harness's own commands first (its Node, when it has one)."""
    return {"PATH": os.pathsep.join([str(folder / "bin"), os.environ.get("PATH", os.defpath)])}


async def _npm_cli(harness: Harness, folder: Path, log: Path) -> None:
    """The CLI by ``npm ci`` from its lockfile, its native build linked, the other platforms' pruned."""
    assert harness.cli is not None
    cli, npm = harness.cli, folder / "npm"
    source = NPM_LOCKS / harness.name if cli.lockfile == "shipped" else folder / "app"
    npm.mkdir()
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(source / name, npm / name)
    await _run([toolchain.npm_binary(), "ci", "--ignore-scripts", "--omit=dev", "--loglevel=error"], log=log, cwd=npm,
               env=_harness_path(folder), what=f"installing {cli.package}@{cli.version} from the npm registry")
    for command in cli.after_install:
        await _run(list(command), log=log, cwd=npm, env=_harness_path(folder),
                   what=f"linking {cli.package}'s native build ({' '.join(command)})")
    for pattern in cli.prune:
        for path in (npm / "node_modules").glob(pattern):
            if path.name != cli.package:
                shutil.rmtree(path, ignore_errors=True)


def _link_bins(harness: Harness, folder: Path) -> None:
    for name, relative in harness.bins.items():
        target = folder / relative
        if not target.exists():
            raise InstallError(f"{harness.title}: the installed packages have no {relative}")
        (folder / "bin" / name).symlink_to(target)


async def _cli_version(harness: Harness, folder: Path, log: Path) -> str | None:
    """What the installed CLI prints for its version (in a scratch HOME, so nothing is written elsewhere)."""
    if not harness.version_command:
        return None
    scratch = folder / ".version-home"
    scratch.mkdir()
    try:
        output = await _run([str(folder / "bin" / harness.version_command[0]), *harness.version_command[1:]], log=log,
                            cwd=folder, env={**_harness_path(folder), "HOME": str(scratch),
                                             "XDG_CONFIG_HOME": str(scratch / ".config"),
                                             "XDG_CACHE_HOME": str(scratch / ".cache"),
                                             "XDG_DATA_HOME": str(scratch / ".local" / "share"),
                                             "XDG_STATE_HOME": str(scratch / ".local" / "state")},
                            what=f"running {' '.join(harness.version_command)}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[-1] if lines else None


def _locked_versions(harness: Harness) -> dict[str, str]:
    """The pinned versions of the harness's own PyPI packages, from its lock file."""
    pins: dict[str, str] = {}
    for line in (LOCKS / f"{harness.name}.txt").read_text(encoding="utf-8").splitlines():
        name, _, rest = line.partition("==")
        if name.strip() in harness.sdk_packages and rest:
            pins[name.strip()] = rest.split(";")[0].strip()
    return pins


def _missing_tools(harness: Harness, folder: Path) -> list[str]:
    path = _harness_path(folder)["PATH"]
    return [f"{command}: {why}" for command, why in harness.system_tools if shutil.which(command, path=path) is None]
