"""A running Harbor environment: one container of the task's image, and the commands run in it.

The container runs ``sleep infinity`` as Harbor's own does, with the run's label (so the sweep of a
killed run finds it), the task's cpus/memory limits, the workdir and the task's variables, and the
network its mode allows: ``none`` unless the task asks for ``public`` and the daemon has a bridge
network of its own (never the host's: the runner's own loopback services must stay out of reach).
Each command runs under coreutils' ``timeout`` inside the container, so a command past its time is
killed there, not only its ``docker exec``. What an agent's command prints is kept up to ``OUTPUT_LIMIT`` on
each of stdout and stderr, the rest read and dropped, so a command that prints without end costs the runner
no more memory than that.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import tempfile
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from prefect_agentenv.exceptions import AgentEnvError
from prefect_agentenv.runtime.launch.docker import RUN_LABEL, docker_cli

_CLI_TIMEOUT = 120.0
_GRACE = 10.0
LOG_DIRS = ("/logs/agent", "/logs/verifier", "/logs/artifacts")


class HarborEnvironmentError(AgentEnvError, RuntimeError):
    """docker refused to start the environment or to copy into it: one line, docker's own."""


@dataclass(frozen=True)
class ExecResult:
    exit_code: int
    output: str
    """stdout then stderr."""
    timed_out: bool = False
    stdout: str = ""
    stderr: str = ""


async def bridge_available() -> bool:
    code, _, _ = await docker_cli(["docker", "network", "inspect", "bridge"], timeout=_CLI_TIMEOUT)
    return code == 0


async def network_for(mode: str) -> str:
    """The docker network of a Harbor network mode: ``bridge`` for public where there is one, else ``none``."""
    return "bridge" if mode == "public" and await bridge_available() else "none"


async def start_environment(image: str, *, workdir: str, env: dict[str, str], network: str, run_id: str | None,
                            cpus: float | None = None, memory_mb: int | None = None, prefix: str = "harbor",
                            workspace: Path | None = None, hosts: tuple[str, ...] = ()) -> str:
    """A started container of ``image``; its name. ``workspace``: a host folder bind-mounted at the workdir;
    ``hosts``: names that resolve to its loopback (its sidecars').

    Raises:
        HarborEnvironmentError: docker could not start it.
    """
    name = f"agentenv-{prefix}-{uuid.uuid4().hex[:12]}"
    args = ["docker", "run", "-d", "--name", name, "--network", network, "--workdir", workdir,
            "--label", f"{RUN_LABEL}={run_id or 'none'}", "--entrypoint", "sleep"]
    if workspace is not None:
        args += ["--mount", f"type=bind,source={workspace},target={workdir}"]
    for host in hosts:
        args += ["--add-host", f"{host}:127.0.0.1"]
    if cpus is not None:
        args += ["--cpus", f"{cpus:g}"]
    if memory_mb is not None:
        args += ["--memory", f"{memory_mb}m"]
    for key in env:
        args += ["-e", key]
    code, _, err = await docker_cli([*args, image, "infinity"], timeout=_CLI_TIMEOUT, env={**os.environ, **env})
    if code != 0:
        await remove_environment(name)
        raise HarborEnvironmentError((err.strip().splitlines() or [f"docker run exited {code}"])[-1])
    made = await exec_in(name, f"mkdir -p {' '.join(LOG_DIRS)} && chmod 777 {' '.join(LOG_DIRS)}", user="root",
                         timeout=60)
    if made.exit_code != 0:
        await remove_environment(name)
        raise HarborEnvironmentError(f"cannot make /logs in the environment: {made.output.strip()[-300:]}")
    return name


async def exec_in(container: str, command: str, *, user: str | None, timeout: float, env: dict[str, str] | None = None,
                  workdir: str | None = None) -> ExecResult:
    """``bash -c command`` in the container, killed inside it at ``timeout`` (exit 124 and ``timed_out``)."""
    inner = f"timeout -k 5 {max(1, int(timeout))} bash -c {shlex.quote(command)}"
    return await exec_argv(container, ["bash", "-c", inner], user=user, timeout=timeout, env=env, workdir=workdir)


MARKER = "AGENTENV_EXEC"
"""In the environment of the processes an agent's command or terminal starts: the value marks them, so they can
be killed inside the container when their caller is gone (a ``docker exec`` whose CLI is killed runs on)."""
OUTPUT_LIMIT = 16 * 1024 * 1024
"""What an agent's command may print on each of stdout and stderr and be kept: a command printing without end
(``yes``) must not fill the runner's memory before its timeout."""
_KILL_MARKED = (f'for p in /proc/[0-9]*; do while IFS= read -r -d "" v; do [ "$v" = "{MARKER}=$1" ] && '
                'kill -KILL "${p#/proc/}" 2>/dev/null; done < "$p/environ"; done 2>/dev/null; true')


async def exec_bash(container: str, args: list[str], *, user: str | None, timeout: float,
                    workdir: str | None = None) -> ExecResult:
    """``bash ARGS...`` in the container exactly as given (an agent's ``bash -lc COMMAND``), killed inside it at
    ``timeout``, or when this call is cancelled (its caller went); its stdout and stderr apart, each kept up
    to ``OUTPUT_LIMIT`` bytes (the rest read and dropped, said at the end of its stderr)."""
    marker = uuid.uuid4().hex
    inner = ["timeout", "-k", "5", str(max(1, int(timeout))), "bash", *args]
    process = await asyncio.create_subprocess_exec(
        *_docker_exec(user, workdir, [MARKER]), container, *inner, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env={**os.environ, MARKER: marker})
    assert process.stdout is not None and process.stderr is not None
    try:
        (out, out_cut), (err, err_cut) = await asyncio.wait_for(
            asyncio.gather(_bounded(process.stdout), _bounded(process.stderr)), timeout + _GRACE)
        code = await process.wait()
    except BaseException as exc:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await asyncio.shield(process.wait())
        await asyncio.shield(kill_marked(container, marker))
        if isinstance(exc, TimeoutError):
            return ExecResult(124, "", timed_out=True)
        raise
    cut = " and ".join(name for name, was in (("stdout", out_cut), ("stderr", err_cut)) if was)
    if cut:
        note = f"the runner kept the first {OUTPUT_LIMIT} bytes of this command's {cut} and dropped the rest"
        err += f"\n[{note}]\n".encode()
    stdout, stderr = out.decode(errors="replace"), err.decode(errors="replace")
    return ExecResult(code, stdout + stderr, timed_out=code in (124, 137), stdout=stdout, stderr=stderr)


async def _bounded(stream: asyncio.StreamReader) -> tuple[bytes, bool]:
    """The stream read to its end, its first ``OUTPUT_LIMIT`` bytes kept; whether any were dropped."""
    kept, cut = bytearray(), False
    while chunk := await stream.read(65536):
        room = OUTPUT_LIMIT - len(kept)
        kept += chunk[:max(room, 0)]
        cut = cut or len(chunk) > room
    return bytes(kept), cut


def _docker_exec(user: str | None, workdir: str | None, env_keys: list[str]) -> list[str]:
    args = ["docker", "exec"]
    if user:
        args += ["-u", user]
    if workdir:
        args += ["-w", workdir]
    for key in env_keys:
        args += ["-e", key]
    return args


def stdio_argv(container: str, argv: list[str], *, user: str | None, workdir: str) -> list[str]:
    """``docker exec -i`` of ``argv``: its stdin kept open, no tty (a stdio server's bytes, not a terminal)."""
    return [*_docker_exec(user, workdir, []), "-i", container, *argv]


_TCP = 'exec 3<>"/dev/tcp/$1/$2" || exit 111; cat <&3 & cat >&3; wait'
"""Inside the container: one TCP connection to ``$1:$2`` in its network, bytes both ways (bash and cat)."""


@contextlib.asynccontextmanager
async def tcp_in(container: str, host: str, port: int) -> AsyncIterator[asyncio.subprocess.Process]:
    """One TCP connection to ``host:port`` in the container's network namespace, as a ``docker exec -i`` whose
    stdin and stdout carry its bytes; on leaving, the CLI killed and, in the container, what it started."""
    marker = uuid.uuid4().hex
    process = await asyncio.create_subprocess_exec(
        *_docker_exec(None, None, [MARKER]), "-i", container, "bash", "-c", _TCP, "relay", host, str(port),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        env={**os.environ, MARKER: marker})
    try:
        yield process
    finally:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await asyncio.shield(process.wait())
        await asyncio.shield(kill_marked(container, marker))


async def kill_marked(container: str, marker: str) -> None:
    """Every process of the container whose environment holds ``AGENTENV_EXEC=<marker>`` killed."""
    with contextlib.suppress(TimeoutError):
        await docker_cli(["docker", "exec", "-u", "root", container, "bash", "-c", _KILL_MARKED, "kill", marker],
                         timeout=_CLI_TIMEOUT)


async def exec_argv(container: str, argv: list[str], *, user: str | None, timeout: float,
                    env: dict[str, str] | None = None, workdir: str | None = None) -> ExecResult:
    """``argv`` run by ``docker exec`` (no shell of the host's between); past ``timeout`` + a grace, exit 124."""
    try:
        code, out, err = await docker_cli([*_docker_exec(user, workdir, list(env or {})), container, *argv],
                                          timeout=timeout + _GRACE, env={**os.environ, **(env or {})})
    except TimeoutError:
        return ExecResult(124, "", timed_out=True)
    return ExecResult(code, out + err, timed_out=code in (124, 137), stdout=out, stderr=err)


async def copy_in(container: str, source: Path, target: str) -> None:
    """The contents of the folder ``source`` at ``target`` in the container (made when absent; its parent
    too, with one more command, only when docker cannot make it alone).

    Raises:
        HarborEnvironmentError: docker could not copy.
    """
    args = ["docker", "cp", f"{source}/.", f"{container}:{target}"]
    code, _, err = await docker_cli(args, timeout=_CLI_TIMEOUT)
    if code != 0:
        made = await exec_in(container, f"mkdir -p {shlex.quote(target)}", user="root", timeout=60)
        if made.exit_code != 0:
            raise HarborEnvironmentError(f"cannot make {target}: {made.output.strip()[-300:]}")
        code, _, err = await docker_cli(args, timeout=_CLI_TIMEOUT)
    if code != 0:
        raise HarborEnvironmentError(f"cannot copy {source} to {target}: {err.strip()[-300:]}")


async def copy_out(container: str, source: str, target: Path) -> bool:
    """``source`` (a file or folder of the container) copied to ``target``; False when it is absent."""
    target.parent.mkdir(parents=True, exist_ok=True)
    code, _, _ = await docker_cli(["docker", "cp", f"{container}:{source}", str(target)], timeout=_CLI_TIMEOUT)
    return code == 0


async def transfer(source_container: str, source: str, target_container: str, target: str, scratch: Path) -> bool:
    """A file or folder of one container at a path of another, through ``scratch`` on the host; False when
    the source is absent (nothing is copied)."""
    import shutil

    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    held = scratch / "item"
    if not await copy_out(source_container, source, held):
        return False
    parent = str(Path(target).parent)
    await exec_in(target_container, f"mkdir -p {shlex.quote(parent)} && rm -rf {shlex.quote(target)}", user="root",
                  timeout=60)
    code, _, err = await docker_cli(["docker", "cp", str(held), f"{target_container}:{target}"], timeout=_CLI_TIMEOUT)
    shutil.rmtree(scratch, ignore_errors=True)
    if code != 0:
        raise HarborEnvironmentError(f"cannot copy {source} to {target}: {err.strip()[-300:]}")
    return True


async def read_text(container: str, path: str) -> str | None:
    """A file of the container as text; None when it is absent."""
    with tempfile.TemporaryDirectory(prefix="agentenv-harbor-") as folder:
        target = Path(folder) / "file"
        if not await copy_out(container, path, target) or not target.is_file():
            return None
        return target.read_text(encoding="utf-8", errors="replace")


MAIN_LABEL = "agentenv.harbor.main"
"""On a sidecar: the container whose network namespace it shares (removed with it)."""


async def start_sidecar(image: str, *, main: str, service: str, command: tuple[str, ...] | None,
                        entrypoint: tuple[str, ...] | None, env: dict[str, str], run_id: str | None) -> str:
    """A compose service's container in ``main``'s network namespace (its loopback, its ``/etc/hosts``); its name.

    Raises:
        HarborEnvironmentError: docker could not start it.
    """
    name = f"agentenv-harbor-{re.sub(r'[^a-zA-Z0-9_.-]', '-', service)}-{uuid.uuid4().hex[:12]}"
    args = ["docker", "run", "-d", "--name", name, "--network", f"container:{main}",
            "--label", f"{RUN_LABEL}={run_id or 'none'}", "--label", f"{MAIN_LABEL}={main}"]
    for key in env:
        args += ["-e", key]
    rest = list(command or ())
    if entrypoint:
        args += ["--entrypoint", entrypoint[0]]
        rest = [*entrypoint[1:], *rest]
    code, _, err = await docker_cli([*args, image, *rest], timeout=_CLI_TIMEOUT, env={**os.environ, **env})
    if code != 0:
        await docker_cli(["docker", "rm", "--force", name], timeout=_CLI_TIMEOUT)
        raise HarborEnvironmentError(f"sidecar '{service}': "
                                     f"{(err.strip().splitlines() or [f'docker run exited {code}'])[-1]}")
    return name


async def remove_environment(container: str) -> None:
    """The container gone, whatever state it is in, and the sidecars in its network namespace with it."""
    _, listed, _ = await docker_cli(["docker", "ps", "--all", "--quiet", "--filter", f"label={MAIN_LABEL}={container}"],
                                    timeout=_CLI_TIMEOUT)
    await docker_cli(["docker", "rm", "--force", *listed.split(), container], timeout=_CLI_TIMEOUT)
