"""The live-URL "launcher": a server someone else runs; it is checked for readiness, never started."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx

from prefect_agentenv.exceptions import DeployError
from prefect_agentenv.runtime.launch.base import (
    Instance,
    LauncherKind,
    LaunchSpec,
    join_url,
    new_instance_id,
    new_probe_client,
    wait_until_ready,
)

logger = logging.getLogger("prefect_agentenv.runtime.launch.url")


class UrlLauncher:
    """Hands out a live server after checking that it answers.

    ``stop`` and ``cleanup`` do nothing: the run does not own the server's lifecycle. Env vars,
    secrets and a working directory cannot be applied to a server that is already running.

    Args:
        run_id: the run this launcher serves (kept for symmetry with the other launchers).
        http_client: the run's shared client for readiness probes; a private one otherwise.
    """

    kind: LauncherKind = "url"

    def __init__(self, *, run_id: str | None = None, http_client: httpx.AsyncClient | None = None) -> None:
        self.run_id = run_id
        self._client = http_client

    async def start(self, spec: LaunchSpec, *, name: str, workdir: Path, cwd: Path | None = None,
                    extra_env: dict[str, str] | None = None) -> Instance:
        """Wait until ``spec.url`` is ready (see :class:`Launcher`).

        Raises:
            DeployError: the spec has no URL, or the server did not answer within the startup timeout.
        """
        if spec.url is None:
            raise DeployError(f"{name!r}: the URL launcher needs a url, got {spec.describe()}")
        if spec.env or spec.secret_env or extra_env or cwd is not None:
            logger.warning("%s: env vars and working directory are ignored for a live URL", name)
        base_url = spec.url.rstrip("/")
        if self._client is not None:
            await wait_until_ready(spec, base_url, name=repr(name), client=self._client)
        else:
            async with new_probe_client() as client:
                await wait_until_ready(spec, base_url, name=repr(name), client=client)
        return Instance(instance_id=new_instance_id(name), name=name, kind="url", base_url=base_url,
                        mcp_url=join_url(base_url, spec.mcp_path))

    async def stop(self, instance: Instance) -> None:
        """Nothing to stop: the server is not ours."""

    async def cleanup(self, run_id: str, interrupted: bool) -> None:
        """Nothing to clean up."""
