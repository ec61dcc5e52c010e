"""The docker launcher: a server in a container, answering on a free loopback port.

It drives the ``docker`` CLI (no SDK dependency) and is used only when a daemon answers
(:meth:`DockerLauncher.available`). Where the daemon has a ``bridge`` network, the container has a
network of its own and its ``container_port`` is published on a free loopback port. A daemon
without one (``dockerd --bridge=none``) runs it on the host's network (``--network host``), where
the server listens on the loopback port its ``{port}`` template is given, as a local process does.
Each instance records the isolation it ran with (``docker <server version>``, its network).

Secret env vars are passed as bare ``-e NAME`` so their values travel in the CLI's environment,
never in its argv. Containers carry the run id as a label, so ``cleanup`` also finds containers
left behind by a flow process that was killed (the kernel's parent-death signal cannot reach a
container).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
from pathlib import Path
from typing import Literal

import httpx

from prefect_agentenv.context import Confinement
from prefect_agentenv.exceptions import DeployError
from prefect_agentenv.runtime.launch.base import (
    Instance,
    LauncherKind,
    LaunchSpec,
    fill_template,
    join_url,
    new_instance_id,
    new_probe_client,
    tail,
    wait_until_ready,
)
from prefect_agentenv.runtime.launch.ports import LOOPBACK, free_port

logger = logging.getLogger("prefect_agentenv.runtime.launch.docker")

RUN_LABEL = "prefect-agentenv.run-id"
INSTANCE_LABEL = "prefect-agentenv.instance-id"
_CONTAINER_HOST = "0.0.0.0"  # inside the container; the host side is published on loopback only
_CLI_TIMEOUT = 300.0  # `docker run` may pull the image first
_INFO_TIMEOUT = 10.0

Network = Literal["bridge", "host"]
"""How a container is networked: ``bridge`` (its own network, its port published on the loopback) or
``host`` (the host's network, listening on a loopback port of its own), the daemon's choice."""


class DockerLauncher:
    """Starts servers as docker containers.

    Args:
        run_id: the run these containers belong to; written as a label on each of them.
        http_client: the run's shared client for readiness probes; a private one otherwise.
        docker: the docker CLI to call.
    """

    kind: LauncherKind = "docker"

    def __init__(self, *, run_id: str | None = None, http_client: httpx.AsyncClient | None = None,
                 docker: str = "docker") -> None:
        self.run_id = run_id
        self.docker = docker
        self._client = http_client
        self._running: dict[str, Instance] = {}
        self._daemon: tuple[str, Network] | None = None

    @staticmethod
    async def available(docker: str = "docker") -> bool:
        """True when the docker CLI exists and its daemon answers ``docker info``."""
        return await server_version(docker) is not None

    def run_args(self, spec: LaunchSpec, *, instance_id: str, cwd: Path | None = None,
                 extra_env: dict[str, str] | None = None, network: Network = "bridge",
                 host_port: int | None = None) -> list[str]:
        """The ``docker run`` argv for ``spec`` (secret values are not in it); on the ``host`` network the
        server is given ``host_port`` on the loopback (its ``container_port`` when none is given)."""
        if spec.image is None:
            raise DeployError(f"{instance_id}: the docker launcher needs an image, got {spec.describe()}")
        if network == "host":
            host, port = LOOPBACK, host_port or spec.container_port
            placement = ["--network", "host"]
        else:
            host, port = _CONTAINER_HOST, spec.container_port
            placement = ["--publish", f"{LOOPBACK}::{port}"]
        args = [self.docker, "run", "--detach", *placement, "--name", _container_name(instance_id),
                "--label", f"{INSTANCE_LABEL}={instance_id}"]
        if self.run_id is not None:
            args += ["--label", f"{RUN_LABEL}={self.run_id}"]
        for key, value in spec.env.items():
            args += ["--env", f"{key}={fill_template(value, host=host, port=port)}"]
        for key, value in (extra_env or {}).items():
            args += ["--env", f"{key}={value}"]
        for key in spec.secret_env:
            args += ["--env", key]
        if cwd is not None:
            # Same path inside and out, so paths handed to the server mean the same on both sides.
            resolved = str(Path(cwd).resolve())
            args += ["--volume", f"{resolved}:{resolved}", "--workdir", resolved]
        args.append(spec.image)
        args += [fill_template(part, host=host, port=port) for part in spec.command or []]
        return args

    async def start(self, spec: LaunchSpec, *, name: str, workdir: Path, cwd: Path | None = None,
                    extra_env: dict[str, str] | None = None) -> Instance:
        """Run the image, publish its port on loopback and wait until it is ready.

        Raises:
            DeployError: docker refused to run it, the container exited, or it timed out.
        """
        version, network = await self._daemon_of(spec, name)
        instance_id = new_instance_id(name)
        # On the host's network a server told its port by `{port}` gets a free one; any other keeps its own.
        host_port = free_port() if network == "host" and spec.told_port else None
        args = self.run_args(spec, instance_id=instance_id, cwd=cwd, extra_env=extra_env, network=network,
                             host_port=host_port)
        cli_env = {**os.environ, **spec.secret_values()}  # secrets reach `-e NAME` through here
        code, out, err = await docker_cli(args, env=cli_env, timeout=_CLI_TIMEOUT)
        if code != 0:
            raise DeployError(f"{name!r}: docker run {spec.image} failed (exit {code}): {err.strip()[-2000:]}")
        container_id = out.strip()
        logs = Path(workdir) / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        stdout_path, stderr_path = logs / f"{instance_id}.stdout.log", logs / f"{instance_id}.stderr.log"
        try:
            if network == "host":
                port = host_port or spec.container_port
            else:
                port = await self._host_port(container_id, spec.container_port)
            base_url = f"http://{LOOPBACK}:{port}"

            async def exited() -> str | None:
                return await self._exit_reason(container_id)

            if self._client is not None:
                await wait_until_ready(spec, base_url, name=repr(name), client=self._client, exited=exited)
            else:
                async with new_probe_client() as client:
                    await wait_until_ready(spec, base_url, name=repr(name), client=client, exited=exited)
        except DeployError as exc:
            await self._remove(container_id, stdout_path, stderr_path)
            stderr = tail(stderr_path)
            raise DeployError(f"{exc}\nlast lines of its stderr ({stderr_path}):\n{stderr}" if stderr else str(exc)) from None
        except BaseException:
            await asyncio.shield(self._remove(container_id, stdout_path, stderr_path))
            raise
        instance = Instance(instance_id=instance_id, name=name, kind="docker", base_url=base_url,
                            mcp_url=join_url(base_url, spec.mcp_path), container_id=container_id,
                            stdout_path=stdout_path, stderr_path=stderr_path,
                            confinement=Confinement(mechanism=f"docker {version}", network=network))
        self._running[instance_id] = instance
        logger.info("%s: started container %s at %s", name, container_id[:12], base_url)
        return instance

    async def stop(self, instance: Instance) -> None:
        """Keep the container's logs, then ``docker rm -f`` it. Idempotent."""
        if self._running.pop(instance.instance_id, None) is None:
            return
        if instance.container_id is not None:
            await self._remove(instance.container_id, instance.stdout_path, instance.stderr_path)
        logger.info("%s: removed container %s", instance.name, (instance.container_id or "")[:12])

    async def cleanup(self, run_id: str, interrupted: bool) -> None:
        """Remove every container labelled with ``run_id``, tracked or left by a killed process."""
        for instance in list(self._running.values()):
            await self.stop(instance)
        try:
            code, out, _ = await docker_cli([self.docker, "ps", "--all", "--quiet", "--filter", f"label={RUN_LABEL}={run_id}"],
                                      timeout=_INFO_TIMEOUT)
        except (OSError, TimeoutError):
            logger.warning("could not list the containers of run %s", run_id)
            return
        ids = out.split() if code == 0 else []
        if ids:
            logger.warning("removing %s container(s) left by run %s", len(ids), run_id)
            await docker_cli([self.docker, "rm", "--force", *ids], timeout=_CLI_TIMEOUT)

    async def _daemon_of(self, spec: LaunchSpec, name: str) -> tuple[str, Network]:
        """The daemon's version and how it networks containers (asked once).

        Raises:
            DeployError: no daemon answers.
        """
        if self._daemon is not None:
            return self._daemon
        version = await server_version(self.docker)
        if version is None:
            raise DeployError(f"{name!r} runs from the image {spec.image}, but no docker daemon answers "
                              f"`{self.docker} info`; start docker, or register it with --command or --url")
        code, _, _ = await docker_cli([self.docker, "network", "inspect", "--format", "{{.Name}}", "bridge"],
                                timeout=_INFO_TIMEOUT)
        network: Network = "bridge" if code == 0 else "host"
        self._daemon = (version, network)
        return version, network

    async def _host_port(self, container_id: str, container_port: int) -> int:
        code, out, err = await docker_cli([self.docker, "port", container_id, f"{container_port}/tcp"], timeout=_INFO_TIMEOUT)
        match = re.search(r":(\d+)\s*$", out.strip().splitlines()[0]) if code == 0 and out.strip() else None
        if match is None:
            raise DeployError(f"container {container_id[:12]} does not publish port {container_port}: {err.strip()}")
        return int(match.group(1))

    async def _exit_reason(self, container_id: str) -> str | None:
        code, out, _ = await docker_cli([self.docker, "inspect", "--format", "{{.State.Running}} {{.State.ExitCode}}",
                                   container_id], timeout=_INFO_TIMEOUT)
        if code != 0:
            return "the container is gone"
        running, _, exit_code = out.strip().partition(" ")
        return None if running == "true" else f"exit code {exit_code}"

    async def _remove(self, container_id: str, stdout_path: Path | None, stderr_path: Path | None) -> None:
        """Copy the container's logs next to the run's other logs, then remove it."""
        if stdout_path is not None and stderr_path is not None:
            with stdout_path.open("wb") as out, stderr_path.open("wb") as err:
                process = await asyncio.create_subprocess_exec(self.docker, "logs", container_id,
                                                               stdout=out, stderr=err)
                try:
                    await asyncio.wait_for(process.wait(), _INFO_TIMEOUT)
                except TimeoutError:
                    with contextlib.suppress(ProcessLookupError):
                        process.kill()
                    await process.wait()
        code, _, problem = await docker_cli([self.docker, "rm", "--force", container_id], timeout=_CLI_TIMEOUT)
        if code != 0 and "no such container" not in problem.lower():
            logger.warning("docker rm %s failed: %s", container_id[:12], problem.strip())


async def server_version(docker: str = "docker") -> str | None:
    """The version of the daemon the docker CLI talks to; None when the CLI is missing or no daemon answers."""
    try:
        code, out, _ = await docker_cli([docker, "info", "--format", "{{.ServerVersion}}"], timeout=_INFO_TIMEOUT)
    except (OSError, TimeoutError):
        return None
    return (out.strip() or None) if code == 0 else None


def _container_name(instance_id: str) -> str:
    return "agentenv-" + re.sub(r"[^a-zA-Z0-9_.-]", "-", instance_id)


async def docker_cli(args: list[str], *, timeout: float, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Run a docker CLI command; (exit code, stdout, stderr). Killed at ``timeout``."""
    process = await asyncio.create_subprocess_exec(*args, stdin=asyncio.subprocess.DEVNULL,
                                                   stdout=asyncio.subprocess.PIPE,
                                                   stderr=asyncio.subprocess.PIPE, env=env)
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        raise
    return process.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace")


async def exec_in_container(container: str, command: str, *, user: str, env: dict[str, str], timeout: float,
                            docker: str = "docker") -> tuple[int, str, str]:
    """``bash -c command`` in a running container as ``user``; (exit code, stdout, stderr).

    Raises:
        TimeoutError: it did not finish within ``timeout`` (the docker CLI process is killed).
    """
    args = [docker, "exec", "-u", user]
    for key, value in env.items():
        args += ["-e", f"{key}={value}"]
    return await docker_cli([*args, container, "bash", "-c", command], timeout=timeout)
