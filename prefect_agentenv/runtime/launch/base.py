"""What a launcher is given (``LaunchSpec``), what it returns (``Instance``) and its interface.

Launchers share the :class:`Launcher` interface and are found by kind in the registry of
``runtime.launchers``. Three kinds are built in: a local process on a free loopback port
(``runtime.process``), a docker container (``runtime.docker``) and a live URL that is only
checked, never started (``runtime.url``); a plugin adds more through the
``prefect_agentenv.launchers`` entry-point group. A launch source names its kind, or has it
inferred from which of ``command``, ``image`` or ``url`` it sets (:func:`infer_kind`).
Readiness is the same for all launchers and lives here: the env card answers 200, or, for
MCP-only servers without a card, the MCP endpoint answers at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal, Protocol, Self, runtime_checkable
from urllib.parse import urlsplit

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from prefect_agentenv.attribute_docs import attribute_docstrings
from prefect_agentenv.context import Confinement
from prefect_agentenv.exceptions import DeployError
from prefect_agentenv.protocols.tls import ssl_context
from prefect_agentenv.runtime.confinement.network_allow import NetworkAllow, host_port

logger = logging.getLogger("prefect_agentenv.runtime")

LauncherKind = str
"""A launcher's registered name: ``process``, ``docker``, ``url`` or one a plugin registers."""
INFERRED_KINDS: tuple[LauncherKind, ...] = ("process", "docker", "url")
"""The kinds a launch source without ``kind`` gets from its fields (see :func:`infer_kind`)."""
CONFINED_KIND: LauncherKind = "confined"
"""The launcher that runs a command under bubblewrap (``runtime/confinement/confined.py``); agents get it by default."""

DEFAULT_READY_PATH = "/.well-known/agent-env.json"
DEFAULT_MCP_PATH = "/mcp"


class Door(BaseModel):
    """One endpoint a confined agent's network reaches: its model, an env's MCP path, a peer agent it may
    delegate to (its A2A endpoint), a widening, the exec path of a Harbor task's environment.

    The same ``host:port`` inside and outside, so no URL is rewritten (``runtime/confinement/netns.py``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Literal["model", "mcp", "peer", "allowed", "environment"]
    host: str
    port: int = Field(gt=0, lt=65536)
    path: str | None = None
    """HTTP path prefix it is limited to (an env's ``/mcp``: that path and below); None: any request."""

    @property
    def label(self) -> str:
        """``mcp 127.0.0.1:5001/mcp``: how the record and the report name it."""
        return f"{self.role} {self.host}:{self.port}{self.path or ''}"

    @classmethod
    def from_url(cls, role: Literal["model", "mcp", "peer"], url: str) -> Door:
        """The door of a URL: its host and port; an MCP door is also limited to the URL's path.

        Raises:
            ValueError: the URL names no host.
        """
        parts = urlsplit(url)
        if not parts.hostname:
            raise ValueError(f"{url!r} names no host")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        path = (parts.path.rstrip("/") or "/") if role == "mcp" else None
        return cls(role=role, host=parts.hostname, port=port, path=None if path == "/" else path)

    @classmethod
    def parse(cls, entry: str) -> Door:
        """An ``allow`` entry (``host:port``) as a door.

        Raises:
            ValueError: not ``host:port`` with a port number.
        """
        host, port = host_port(entry)
        return cls(role="allowed", host=host, port=port)


class LaunchSource(BaseModel):
    """Where a server comes from and how it starts.

    The fields a launch spec and the env and agent blocks share, written once: the blocks add
    their version and secrets, the spec adds the paths it checks. Exactly one of ``command``,
    ``image`` or ``url`` says where the server comes from; with ``image``, ``command`` may also be
    given and becomes the container's command. ``kind`` picks the launcher; left out, it follows
    from those fields as it always has, so sources saved before it existed launch as before.
    """

    # The env and agent blocks inherit these fields, and a block's JSON Schema is built by
    # Prefect's own ``json_schema_extra``: their descriptions must be on the fields themselves.
    model_config = ConfigDict(use_attribute_docstrings=True)

    command: list[str] | None = None
    """argv template of a local server; the launcher fills in {host} and {port} (also in env values)."""
    image: str | None = None
    """Docker image to run instead of a local command."""
    container_port: int = Field(default=8000, gt=0, lt=65536)
    """Port the server listens on inside its container (image only)."""
    url: str | None = None
    """Base URL of a server that is already running; it is never started or stopped."""
    kind: LauncherKind | None = Field(default=None, min_length=1)
    """Launcher that starts the server: process, docker, url or a plugin's; inferred from command, image or url
    when not given."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment variables for the server, on top of the current environment (a confined server gets
    only these and what the run gives it)."""
    startup_timeout_seconds: float = Field(default=60.0, gt=0)
    """How long the server may take to become ready."""
    confinement: Literal["confined", "none"] | None = None
    """Whether an agent started from a command runs confined (docs/security.md): none opts out and is recorded;
    left out, agents run confined where bubblewrap works and envs do not."""
    memory_limit_mb: int | None = Field(default=None, gt=0)
    """Memory of a confined server in MB: each process's private writable memory, and all its processes together
    where it gets a cgroup of its own (docs/security.md); 8192 when not given."""
    process_limit: int | None = Field(default=None, gt=0)
    """Processes (and threads) a confined server may run at once, all counted where it gets a cgroup of its own
    (for root too); without one, per user and not enforced when the runner is root; 1024 when not given."""
    cpu_limit_seconds: int | None = Field(default=None, gt=0)
    """CPU time each process of a confined server may use before it is stopped; 7200 when not given."""
    disk_limit_mb: int | None = Field(default=None, gt=0)
    """Disk a confined server may fill in its sandbox (its /app, /tmp and /home together) in MB: past it, it is
    stopped (a resource limit, its own failure), and no single file it writes may be larger; 10240 when not given."""
    install_paths: list[str] = Field(default_factory=list)
    """Host folders the server's own code lives in, visible read-only at the same paths when it runs confined
    (the command's own venv and Python are found without them)."""
    network: Literal["public"] | NetworkAllow | None = None
    """Network of an agent that runs confined: left out, only its model endpoint and its envs' MCP paths;
    {allow: [host:port, ...]} adds those endpoints; public keeps the host's whole network (recorded)."""

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (problem := source_problem(self.command, self.image, self.url)) is not None:
            raise ValueError(problem)
        if (problem := kind_problem(self.kind, self.command, self.image, self.url)) is not None:
            raise ValueError(problem)
        if (problem := confinement_problem(self.kind, self.confinement, self.command)) is not None:
            raise ValueError(problem)
        return self


class LaunchSpec(LaunchSource):
    """How to start one instance of a server (an env, an agent): its source and what to check."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=attribute_docstrings, frozen=True)

    secret_env: dict[str, SecretStr] = Field(default_factory=dict)
    """Environment variables whose values are secret: never logged, never in argv."""
    ready_path: str = DEFAULT_READY_PATH
    """Path that answers 200 once the server is ready (the env card)."""
    mcp_path: str = DEFAULT_MCP_PATH
    """Path of the MCP endpoint; an answer there also counts as ready when the card is 404."""
    sandbox_env: dict[str, str] = Field(default_factory=dict)
    """Variables naming folders of the server's own inside the sandbox it starts in, as paths relative
    to the sandbox root (``.`` for the root itself): each folder is made and the variable set to its
    absolute path (local processes started in a sandbox; a coding agent's HOME, XDG and workspace)."""
    doors: tuple[Door, ...] = ()
    """Endpoints the run gives a confined server's network (its model endpoint); envs' MCP doors open later."""
    overlays: tuple[tuple[str, str], ...] = ()
    """(host file, path inside): files a confined server sees in place of the system's, read-only (a Harbor
    task's shell, which runs each command in the task's environment, over ``/usr/bin/bash``)."""
    follow_tree: bool = False
    """Stop, with the server, what it started outside its process group (a CLI in a session of its
    own, a tmux server): found by an instance marker in their environment and by parentage."""

    kind: LauncherKind = Field(default="process", min_length=1)
    """Launcher that starts the server: process, docker, url or a plugin's; inferred from command, image or url
    when not given."""

    @model_validator(mode="before")
    @classmethod
    def _kind_given_or_inferred(cls, data: Any) -> Any:
        """A spec always names its launcher: one without ``kind`` gets the one its source implies."""
        if isinstance(data, dict) and data.get("kind") is None:
            kind = (CONFINED_KIND if data.get("confinement") == "confined"
                    else infer_kind(data.get("command"), data.get("image"), data.get("url")))
            return {**data, "kind": kind}
        return data

    @property
    def told_port(self) -> bool:
        """Whether the server is told its port (a ``{port}`` in its command or environment), so another free
        port can be given when the one picked is taken."""
        return any("{port}" in part for part in [*(self.command or []), *self.env.values()])

    def secret_values(self) -> dict[str, str]:
        """The secret env vars revealed, for handing to a child process only."""
        return {k: v.get_secret_value() for k, v in self.secret_env.items()}

    def describe(self) -> str:
        """One line saying where the server comes from (no secrets), and its launcher when not inferred."""
        if self.url is not None:
            text = f"url {self.url}"
        elif self.image is not None:
            text = f"image {self.image} (port {self.container_port})"
        else:
            text = "command " + " ".join(self.command or [])
        inferred = infer_kind(self.command, self.image, self.url)
        return text if self.kind == inferred else f"{text} (launcher {self.kind})"


def source_problem(command: list[str] | None, image: str | None, url: str | None) -> str | None:
    """Why this combination cannot say where a server comes from, or None when it can."""
    if url is not None and (command is not None or image is not None):
        return "give either url (a live server) or command/image (a server to start), not both"
    if url is None and image is None and not command:
        return "give one of command (argv template), image (docker) or url (live server)"
    return None


def infer_kind(command: list[str] | None, image: str | None, url: str | None) -> LauncherKind:
    """The launcher a source without ``kind`` gets: url, else docker for an image, else process."""
    if url is not None:
        return "url"
    if image is not None:
        return "docker"
    return "process"


def kind_problem(kind: LauncherKind | None, command: list[str] | None, image: str | None,
                 url: str | None) -> str | None:
    """Why a built-in ``kind`` cannot start this source (``kind: docker`` with no image), or None.

    A plugin's kind is not checked here: its launcher says what it needs when it starts.
    """
    if kind is None or kind not in INFERRED_KINDS:
        return None
    inferred = infer_kind(command, image, url)
    if kind == inferred:
        return None
    return (f"kind '{kind}' does not fit the source given, which the '{inferred}' launcher starts "
            f"(leave kind out to have it inferred)")


def confinement_problem(kind: LauncherKind | None, confinement: str | None, command: list[str] | None) -> str | None:
    """Why ``kind`` and ``confinement`` contradict each other, or the confined launcher has nothing to run."""
    if kind == CONFINED_KIND and confinement == "none":
        return "kind 'confined' and confinement 'none' contradict each other: give one of them"
    if (kind == CONFINED_KIND or confinement == "confined") and not command:
        return "only a command can run confined (an image or a URL cannot): leave confinement out"
    if confinement == "confined" and kind not in (None, CONFINED_KIND):
        return f"confinement 'confined' needs the confined launcher, not kind '{kind}'"
    return None


class Instance(BaseModel):
    """A started (or checked) server, with what is needed to reach it and to stop it."""

    model_config = ConfigDict(json_schema_extra=attribute_docstrings)

    instance_id: str
    """Unique id of this instance (name plus a random suffix)."""
    name: str
    """What was started (env id or agent name)."""
    kind: LauncherKind
    """The launcher that owns it."""
    base_url: str
    """Where the server answers, without a trailing slash."""
    mcp_url: str
    """``base_url`` + the spec's MCP path."""
    pid: int | None = None
    """Process id (and process group id) of a local process."""
    container_id: str | None = None
    """Docker container id."""
    stdout_path: Path | None = None
    """File that receives the server's standard output."""
    stderr_path: Path | None = None
    """File that receives the server's standard error."""
    started_at: float = Field(default_factory=time.time)
    """Unix time the instance was started."""
    confinement: Confinement | None = None
    """What confines the process, for a launcher that confines (the confined launcher; the docker launcher,
    whose container is its isolation)."""


@runtime_checkable
class Launcher(Protocol):
    """Starts and stops instances for one run.

    Lifecycle:

    * ``start`` — called by a deploy step, once per instance; returns only when the instance
      is ready. On any failure (exit, timeout, cancellation) nothing it started is left running.
    * ``stop`` — called by the run's teardown registry when the run ends, or earlier by a step
      that stops what it deployed (a judge, a retry). Idempotent and bounded in time.
    * ``cleanup`` — called once when the run is over, after the teardown registry has run;
      stops whatever this launcher still tracks for ``run_id`` (a leak, or everything when the
      run was ``interrupted`` and teardown was cut short). Never raises.
    """

    kind: LauncherKind

    async def start(self, spec: LaunchSpec, *, name: str, workdir: Path, cwd: Path | None = None,
                    extra_env: dict[str, str] | None = None) -> Instance:
        """Start an instance of ``spec`` and wait until it is ready.

        Args:
            spec: how to start the server.
            name: what is started (env id, agent name); used in ids, log file names, errors.
            workdir: the run's folder; log files are kept there.
            cwd: working directory of the server (an agent's sandbox); the current one if None.
            extra_env: more environment variables (e.g. the MCP URL an agent should use).

        Raises:
            DeployError: the server failed to start or did not become ready in time.
        """
        ...

    async def stop(self, instance: Instance) -> None:
        """Stop ``instance``; a no-op when it is already stopped."""
        ...

    async def cleanup(self, run_id: str, interrupted: bool) -> None:
        """Stop everything this launcher still runs for ``run_id``."""
        ...


def new_instance_id(name: str) -> str:
    """A short unique id that still says what it is."""
    return f"{name}-{uuid.uuid4().hex[:10]}"


def fill_template(value: str, *, host: str, port: int) -> str:
    """Replace ``{host}``/``{port}`` only, so other braces (JSON arguments) survive."""
    return value.replace("{host}", host).replace("{port}", str(port))


def join_url(base_url: str, path: str) -> str:
    """``base_url`` + ``path`` with exactly one slash between them."""
    return base_url.rstrip("/") + "/" + path.lstrip("/")


ExitCheck = Callable[[], Awaitable[str | None]]
"""Returns why the server is gone (exit code, logs), or None while it still runs."""

_PROBE_TIMEOUT = 2.0
_FIRST_DELAY = 0.02
_MAX_DELAY = 0.5
_CLOSED_DELAY = 0.05
"""How often a loopback port that does not accept connections yet is tried again. The server is
still loading (uvicorn and most servers listen only once their app is up); a refused connect costs
~0.07 ms of CPU, a refused HTTP probe ~0.4 ms, so the port is watched closely without the backoff
that let a server wait up to ``_MAX_DELAY`` after it was up."""
_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


async def wait_until_ready(spec: LaunchSpec, base_url: str, *, name: str, client: httpx.AsyncClient,
                           exited: ExitCheck | None = None, timeout: float | None = None) -> None:
    """Poll ``base_url`` until it is ready, the server exits, or the startup timeout passes.

    Ready means the card (``spec.ready_path``) answers 200, or the card is 404 and the MCP
    endpoint answers with any status below 500 other than 404 (an MCP-only server answers a
    bare GET with 400/405/406). On loopback, the port is first watched with plain TCP connects
    every ``_CLOSED_DELAY``; once it accepts, HTTP probes back off from ``_FIRST_DELAY`` to
    ``_MAX_DELAY`` (short at first because local servers are usually up within a few hundred
    milliseconds).

    Raises:
        DeployError: the server exited (the message carries ``exited``'s reason) or timed out.
    """
    budget = spec.startup_timeout_seconds if timeout is None else timeout
    deadline = time.monotonic() + budget
    ready_url = join_url(base_url, spec.ready_path)
    mcp_url = join_url(base_url, spec.mcp_path)
    address = _loopback_address(base_url)
    delay = _FIRST_DELAY
    last = "no answer yet"
    while True:
        if exited is not None and (reason := await exited()) is not None:
            raise DeployError(f"{name} exited before it was ready: {reason}")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise DeployError(f"{name} did not become ready within {budget:g}s at {ready_url} (last: {last})")
        if address is not None and not await _accepts(*address, timeout=min(_PROBE_TIMEOUT, remaining)):
            last = "connection refused"
            await asyncio.sleep(min(_CLOSED_DELAY, max(deadline - time.monotonic(), 0)))
            continue
        ready, last = await _probe(client, ready_url, mcp_url, min(_PROBE_TIMEOUT, max(remaining, 0.05)))
        if ready:
            logger.debug("%s is ready (%s)", name, last)
            return
        await asyncio.sleep(min(delay, max(deadline - time.monotonic(), 0)))
        delay = min(delay * 1.6, _MAX_DELAY)


async def _probe(client: httpx.AsyncClient, ready_url: str, mcp_url: str, timeout: float) -> tuple[bool, str]:
    """One HTTP readiness probe: whether the server is ready, and what it answered."""
    card_status = await _status(client, ready_url, timeout)
    if card_status == 200:
        return True, "card 200"
    if card_status != 404:
        return False, f"card {card_status}" if card_status is not None else "no answer"
    mcp_status = await _status(client, mcp_url, timeout)
    if mcp_status is not None and mcp_status < 500 and mcp_status != 404:
        return True, f"no card, MCP answers {mcp_status}"
    return False, f"card 404, MCP {mcp_status if mcp_status is not None else 'no answer'}"


async def _status(client: httpx.AsyncClient, url: str, timeout: float) -> int | None:
    """HTTP status of a GET, without reading the body (an MCP GET may open an event stream)."""
    try:
        async with client.stream("GET", url, timeout=timeout,
                                 headers={"Accept": "application/json, text/event-stream"}) as response:
            return response.status_code
    except httpx.HTTPError:
        return None


def _loopback_address(base_url: str) -> tuple[str, int] | None:
    """(host, port) of a loopback ``base_url``, which a direct TCP connect may watch (a proxy is
    never in the way there); None for any other host."""
    parts = urlsplit(base_url)
    if parts.hostname not in _LOOPBACK_HOSTS:
        return None
    try:
        return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:  # a port out of range: let the HTTP probe report it
        return None


async def _accepts(host: str, port: int, *, timeout: float) -> bool:
    """Whether something accepts TCP connections at ``host``:``port``."""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    except (OSError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


def new_probe_client() -> httpx.AsyncClient:
    """The client used for readiness when the caller did not pass the run's client.

    ``trust_env=False`` keeps proxy variables from routing loopback probes elsewhere.
    """
    return httpx.AsyncClient(trust_env=False, follow_redirects=True, verify=ssl_context(trust_env=False))


def tail(path: Path | None, lines: int = 20, max_chars: int = 4000) -> str:
    """The last lines of a log file, for error messages ('' when there is none)."""
    if path is None or not path.exists():
        return ""
    with path.open("rb") as fh:
        fh.seek(0, 2)
        size = fh.tell()
        fh.seek(max(0, size - max_chars))
        text = fh.read().decode("utf-8", errors="replace")
    return "\n".join(text.splitlines()[-lines:])
