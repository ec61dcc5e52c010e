"""What is installed: each harness folder's ``manifest.json``, and the launch of an installed harness.

A harness folder (``<harness dir>/<name>/``) holds ``app/`` (the wrapper's files, taken from the
pinned ``agentenv-framework`` package), ``venv/`` (its Python), ``npm/`` (its CLI), ``node/`` (a
registry Node, when the system's is too old), ``bin/`` (the commands the wrapper runs, first on
its PATH) and ``manifest.json``, written last: a folder without one is an install that did not
finish, and is started again from nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from prefect_agentenv.agents.harnesses.catalog import (
    FRAMEWORK_PACKAGE,
    FRAMEWORK_VERSION,
    HARNESSES,
    LOCKS,
    NODE_VERSION,
    NPM_LOCKS,
    Harness,
    harness_named,
)
from prefect_agentenv.attribute_docs import attribute_docstrings
from prefect_agentenv.runtime.launch.base import LaunchSpec
from prefect_agentenv.settings import get_settings

MANIFEST = "manifest.json"
A2A_CARD_PATH = "/.well-known/agent-card.json"
STOP_GRACE_SECONDS = 5
"""uvicorn's graceful shutdown: the wrapper's lifespan kills the CLIs of running turns in it."""
STARTUP_TIMEOUT_SECONDS = 120.0
"""OpenHands imports its SDK (LiteLLM and all) before it listens: ~10 s on a quiet machine."""


class HarnessManifest(BaseModel):
    """What one harness folder holds, written by the installer once everything is in place."""

    model_config = ConfigDict(json_schema_extra=attribute_docstrings, extra="ignore")

    name: str
    """AgentEnv's folder name of the harness."""
    title: str
    framework: str
    """The AgentEnv package the wrapper came from (``agentenv-framework==…``)."""
    cli: str | None = None
    """The CLI's npm package and version (``opencode-ai@1.17.18``)."""
    cli_version: str | None = None
    """What the installed CLI says its version is."""
    sdk: dict[str, str] = Field(default_factory=dict)
    """PyPI packages that are the harness itself, with their versions (OpenHands' SDK)."""
    python: str
    """Version of the venv's Python."""
    node: str | None = None
    """The Node it runs on: ``system <version>`` or ``registry <version>``."""
    aliases: list[str] = Field(default_factory=list)
    """Other ids the framework's ``aliases.toml`` gives it."""
    missing_tools: list[str] = Field(default_factory=list)
    """System commands it takes from PATH that were not there at install, with why they matter."""
    fingerprint: str
    """Hash of what was asked for; a different one (a new pin) means install again."""
    installed_at: float = Field(default_factory=time.time)
    install_seconds: float = 0.0


def harnesses_dir() -> Path:
    """Where harnesses are installed (``PREFECT_AGENTENV_HARNESS_DIR``, else ``<home>/harnesses``), absolute."""
    return get_settings().harnesses_dir.resolve()


def fingerprint(harness: Harness) -> str:
    """A hash of everything an install of ``harness`` is made from (pins, lockfiles, versions)."""
    digest = hashlib.sha256(json.dumps([repr(harness), FRAMEWORK_VERSION, NODE_VERSION]).encode())
    for path in sorted([LOCKS / f"{harness.name}.txt", *(NPM_LOCKS / harness.name).glob("*.json")]):
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def read_manifest(folder: Path) -> HarnessManifest | None:
    """The manifest of a harness folder, or None when it has none (or an unreadable one)."""
    try:
        return HarnessManifest.model_validate_json((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValidationError, ValueError):
        return None


def installed(name: str, root: Path | None = None) -> HarnessManifest | None:
    """The manifest of the installed harness ``name`` (folder name, AgentEnv id or alias), if complete."""
    base = root or harnesses_dir()
    harness = harness_named(name, aliases=_installed_aliases(base))
    if harness is None:
        return None
    manifest = read_manifest(base / harness.name)
    return manifest if manifest is not None and manifest.fingerprint == fingerprint(harness) else None


def installed_all(root: Path | None = None) -> dict[str, HarnessManifest | None]:
    """Every known harness with its manifest when it is installed (an outdated install counts as not)."""
    base = root or harnesses_dir()
    return {name: installed(name, base) for name in HARNESSES}


def _installed_aliases(root: Path) -> dict[str, str]:
    """alias → folder name, from the manifests of what is installed."""
    aliases: dict[str, str] = {}
    for name in HARNESSES:
        manifest = read_manifest(root / name)
        for alias in manifest.aliases if manifest else []:
            aliases.setdefault(alias, name)
    return aliases


def launch_spec(harness: Harness, root: Path | None = None) -> LaunchSpec:
    """How to start the installed ``harness``: its wrapper under uvicorn on its own venv, its ``bin/``
    first on PATH, its state folders inside the agent's sandbox, its whole process tree followed."""
    folder = (root or harnesses_dir()) / harness.name
    command = [str(folder / "venv" / "bin" / "python"), "-m", "uvicorn", "a2a_server:app", "--host", "{host}",
               "--port", "{port}", "--timeout-graceful-shutdown", str(STOP_GRACE_SECONDS), "--log-level", "warning"]
    # The child inherits this process's environment; its PATH gains the harness's own commands first.
    path = os.pathsep.join([str(folder / "bin"), os.environ.get("PATH", os.defpath)])
    env = {"PYTHONPATH": str(folder / "app"), "PATH": path, "A2A_PORT": "{port}", "A2A_HOST": "{host}",
           "PYTHONUNBUFFERED": "1", **harness.constant_env}
    return LaunchSpec(command=command, env=env, ready_path=A2A_CARD_PATH, startup_timeout_seconds=STARTUP_TIMEOUT_SECONDS,
                      sandbox_env={**harness.home_env, harness.workspace_variable: "."}, follow_tree=True,
                      install_paths=[str(folder)])


def framework_requirement() -> str:
    """The pinned AgentEnv package, as pip and uv spell it."""
    return f"{FRAMEWORK_PACKAGE}=={FRAMEWORK_VERSION}"
