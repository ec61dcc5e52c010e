"""The launchers of one run: one per kind (process, docker, URL), created on first use."""

from __future__ import annotations

import logging

import httpx

from prefect_agentenv.runtime.docker import DockerLauncher
from prefect_agentenv.runtime.launch import Launcher, LauncherKind, LaunchSpec
from prefect_agentenv.runtime.process import ProcessLauncher
from prefect_agentenv.runtime.url import UrlLauncher

logger = logging.getLogger("prefect_agentenv.runtime.launchers")


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
        """The run's launcher for ``spec`` (process, docker or URL)."""
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


def launcher_for(spec: LaunchSpec, *, run_id: str | None = None,
                 http_client: httpx.AsyncClient | None = None) -> Launcher:
    """A new launcher of the kind ``spec`` needs."""
    if spec.kind == "url":
        return UrlLauncher(run_id=run_id, http_client=http_client)
    if spec.kind == "docker":
        return DockerLauncher(run_id=run_id, http_client=http_client)
    return ProcessLauncher(run_id=run_id, http_client=http_client)
