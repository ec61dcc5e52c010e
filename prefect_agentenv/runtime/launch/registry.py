"""The launcher registry, and the launchers of one run: one per kind, created on first use.

A launcher kind is a name (``process``, ``confined``, ``docker``, ``url``, or one a plugin brings) mapped to a
factory that makes a :class:`Launcher` for a run. The built-in kinds are registered below with
:func:`register_launcher`, exactly as a test or notebook would register one; an installed plugin
lists its factory in the ``prefect_agentenv.launchers`` entry-point group (entry name == kind),
which is read only when a kind is asked for that nobody registered, and only that entry is loaded.

A launcher written in a plugin takes what it needs from this module: the interface and models
(:class:`Launcher`, :class:`LaunchSpec`, :class:`Instance`), readiness (:func:`wait_until_ready`),
the error a failed start raises (:class:`DeployError`) and the built-in launchers to wrap.
docs/launchers.md walks through one.
"""

from __future__ import annotations

import difflib
import logging
from importlib.metadata import EntryPoint, entry_points
from typing import Protocol

import httpx

from prefect_agentenv.exceptions import ConfigurationError, DeployError
from prefect_agentenv.runtime.confinement.confined import ConfinedLauncher
from prefect_agentenv.runtime.launch.base import (
    Instance,
    Launcher,
    LauncherKind,
    LaunchSpec,
    fill_template,
    join_url,
    new_instance_id,
    new_probe_client,
    tail,
    wait_until_ready,
)
from prefect_agentenv.runtime.launch.docker import DockerLauncher
from prefect_agentenv.runtime.launch.process import ProcessLauncher
from prefect_agentenv.runtime.launch.url import UrlLauncher

__all__ = [
    "ENTRY_POINT_GROUP",
    "ConfinedLauncher",
    "DeployError",
    "DockerLauncher",
    "Instance",
    "LaunchSpec",
    "Launcher",
    "LauncherFactory",
    "LauncherKind",
    "Launchers",
    "ProcessLauncher",
    "UrlLauncher",
    "fill_template",
    "join_url",
    "known_launcher_kinds",
    "launcher_factory",
    "launcher_for",
    "new_instance_id",
    "new_probe_client",
    "register_launcher",
    "tail",
    "wait_until_ready",
]

logger = logging.getLogger("prefect_agentenv.runtime.launch.registry")

ENTRY_POINT_GROUP = "prefect_agentenv.launchers"
"""The entry-point group a plugin lists its launchers in (entry name == kind, value a factory)."""


class LauncherFactory(Protocol):
    """Makes the launcher of one run; a launcher class whose ``__init__`` takes these is one."""

    def __call__(self, *, run_id: str | None = None, http_client: httpx.AsyncClient | None = None) -> Launcher:
        ...


_factories: dict[LauncherKind, LauncherFactory] = {}
_advertised: dict[str, EntryPoint] | None = None


def register_launcher(kind: LauncherKind, factory: LauncherFactory, *, replace: bool = False) -> LauncherFactory:
    """Make ``kind`` start through launchers from ``factory`` (installed plugins use the entry point).

    Raises:
        ConfigurationError: ``kind`` is already registered to another factory and ``replace`` is False.
    """
    if not replace and _factories.get(kind, factory) is not factory:
        raise ConfigurationError(f"launcher kind '{kind}' is already registered")
    _factories[kind] = factory
    return factory


register_launcher("process", ProcessLauncher)
register_launcher("docker", DockerLauncher)
register_launcher("url", UrlLauncher)
register_launcher("confined", ConfinedLauncher)


def _entry_points() -> dict[str, EntryPoint]:
    """The group's entries by name, read once: installed distributions do not change under a run."""
    global _advertised
    if _advertised is None:
        _advertised = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    return _advertised


def known_launcher_kinds() -> list[LauncherKind]:
    """Every kind that can be asked for: registered ones and those installed plugins advertise."""
    return sorted(set(_factories) | set(_entry_points()))


def launcher_factory(kind: LauncherKind) -> LauncherFactory:
    """The factory of ``kind``, loading its plugin's entry point the first time it is asked for.

    Raises:
        ConfigurationError: no launcher has that kind (the message lists the known kinds), or its
            entry point cannot be loaded.
    """
    factory = _factories.get(kind)
    if factory is not None:
        return factory
    entry = _entry_points().get(kind)
    if entry is None:
        raise ConfigurationError(unknown_kind_message(kind))
    try:
        loaded = entry.load()
    except Exception as exc:  # a broken plugin is a configuration problem, reported with its entry
        raise ConfigurationError(f"launcher kind '{kind}' ({entry.value}) could not be loaded: {exc}") from exc
    if not callable(loaded):
        raise ConfigurationError(f"entry point '{kind}' ({entry.value}) must be a launcher factory (a class or "
                                 f"function taking run_id and http_client), not {type(loaded).__name__}")
    return register_launcher(kind, loaded)


def unknown_kind_message(kind: str) -> str:
    """Why ``kind`` names no launcher, with a close match and where a new one comes from."""
    known = known_launcher_kinds()
    close = difflib.get_close_matches(kind, known, n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    return (f"unknown launcher kind '{kind}'; {hint}known kinds: {', '.join(known)}. "
            f"A launcher of your own must be installed as an entry point in the '{ENTRY_POINT_GROUP}' group")


def launcher_for(spec: LaunchSpec, *, run_id: str | None = None,
                 http_client: httpx.AsyncClient | None = None) -> Launcher:
    """A new launcher of the kind ``spec`` names.

    Raises:
        ConfigurationError: the kind is unknown, or its factory made a launcher of another kind.
    """
    launcher = launcher_factory(spec.kind)(run_id=run_id, http_client=http_client)
    if launcher.kind != spec.kind:
        raise ConfigurationError(f"the launcher registered as kind '{spec.kind}' "
                                 f"({type(launcher).__name__}) says its kind is '{launcher.kind}'")
    return launcher


class Launchers:
    """One launcher of each kind for one run, created on first use.

    Args:
        run_id: the run; launchers label and clean up by it.
        http_client: the run's shared client for readiness probes.
    """

    def __init__(self, run_id: str, *, http_client: httpx.AsyncClient | None = None) -> None:
        self.run_id = run_id
        self._client = http_client
        self._by_kind: dict[LauncherKind, Launcher] = {}

    def for_spec(self, spec: LaunchSpec) -> Launcher:
        """The run's launcher of the kind ``spec`` names (see :func:`launcher_for`)."""
        launcher = self._by_kind.get(spec.kind)
        if launcher is None:
            launcher = self._by_kind[spec.kind] = launcher_for(spec, run_id=self.run_id, http_client=self._client)
        return launcher

    async def cleanup(self, *, interrupted: bool) -> None:
        """Call ``cleanup`` on every launcher the run used (after its teardown registry ran)."""
        for launcher in self._by_kind.values():
            try:
                await launcher.cleanup(self.run_id, interrupted)
            except Exception:  # best effort: cleanup must never mask the run's own outcome
                logger.exception("cleanup of the %s launcher failed", launcher.kind)
