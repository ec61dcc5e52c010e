"""One command in a fresh container of an image, then the container gone: how a unit-test verifier runs
apart from the agent (docs/security.md, "Grading apart").

The container is created with no network (``--network none``), the run's label (so the sweep of a
killed run finds it), the folders given mounted (a grading box's copy of the agent's sandbox, the
verifier's own files read-only), and started attached; files are read back with ``docker cp``
before it is removed by its name, whatever happened. Variables travel as bare ``-e NAME`` in the
CLI's environment, never in its argv.
"""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prefect_agentenv.exceptions import AgentEnvError
from prefect_agentenv.jsontypes import JsonValue
from prefect_agentenv.runtime.launch.docker import RUN_LABEL, docker_cli

_CLI_TIMEOUT = 120.0


@dataclass(frozen=True)
class Mount:
    """A host folder at a path inside the container."""

    host: Path
    inside: str
    read_only: bool = False

    def arg(self) -> str:
        return f"type=bind,source={self.host},target={self.inside}" + (",readonly" if self.read_only else "")


@dataclass
class FreshRun:
    """What the command did: its exit code (124 when stopped at its timeout), output, and the files read back."""

    exit_code: int
    stdout: str
    stderr: str
    files: dict[str, JsonValue] = field(default_factory=dict)


class FreshContainerError(AgentEnvError, RuntimeError):
    """docker refused to create the container (a missing image, a bad mount): one line, docker's own."""


async def run_in_fresh_container(image: str, command: str, *, mounts: Sequence[Mount], workdir: str, user: str,
                                 env: dict[str, str], timeout: float, run_id: str | None, read: Sequence[str],
                                 docker: str = "docker") -> FreshRun:
    """``bash -c command`` in a new container of ``image``; the container is removed before this returns.

    Raises:
        FreshContainerError: the container could not be created.
    """
    name = f"agentenv-grading-{uuid.uuid4().hex[:12]}"
    args = [docker, "create", "--name", name, "--network", "none", "--workdir", workdir, "--user", user,
            "--label", f"{RUN_LABEL}={run_id or 'none'}"]
    for mount in mounts:
        args += ["--mount", mount.arg()]
    for key in env:
        args += ["-e", key]
    code, _, err = await docker_cli([*args, image, "bash", "-c", command], timeout=_CLI_TIMEOUT, env={**os.environ, **env})
    if code != 0:
        raise FreshContainerError((err.strip().splitlines() or [f"docker create exited {code}"])[-1])
    try:
        try:
            code, out, err = await docker_cli([docker, "start", "--attach", name], timeout=timeout)
        except TimeoutError:
            code, out, err = 124, "", f"did not finish within {timeout:g}s"
        return FreshRun(code, out, err, {path: await _read_back(docker, name, path) for path in read})
    finally:
        await docker_cli([docker, "rm", "--force", name], timeout=_CLI_TIMEOUT)


async def _read_back(docker: str, name: str, path: str) -> JsonValue:
    """A file of the stopped container, parsed as JSON when it is JSON, else its text; None when absent."""
    with tempfile.TemporaryDirectory(prefix="agentenv-read-") as folder:
        target = Path(folder) / "file"
        code, _, _ = await docker_cli([docker, "cp", f"{name}:{path}", str(target)], timeout=_CLI_TIMEOUT)
        if code != 0 or not target.is_file():
            return None
        text = target.read_text(encoding="utf-8", errors="replace")
    try:
        parsed: JsonValue = json.loads(text)
    except ValueError:
        return text
    return parsed
