"""The image of a Harbor task's environment: built with the local docker daemon once, cached by content.

A build's tag is ``agentenv-harbor/<task>:<hash>``, the hash taken over every file of the build
context (paths and bytes), so a rerun finds the image it built and builds nothing; a changed file
is a new tag. Builds use the host's network (``--network host``): a daemon without a bridge has no
other, and a build needs none unless its Dockerfile downloads. Built images carry the label
``prefect-agentenv.harbor-cache``, so they can be listed and removed together.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from prefect_agentenv.exceptions import AgentEnvError
from prefect_agentenv.runtime.launch.docker import docker_cli

CACHE_LABEL = "prefect-agentenv.harbor-cache"
REPOSITORY = "agentenv-harbor"
_INSPECT_TIMEOUT = 30.0
_PULL_TIMEOUT = 600.0
_LOG_TAIL = 4000
_locks: dict[str, asyncio.Lock] = {}


class ImageError(AgentEnvError, RuntimeError):
    """The image could not be built or found; the message carries the end of docker's log."""


@dataclass(frozen=True)
class ImageConfig:
    """What the image says about how it runs: its id, WORKDIR, environment and user."""

    tag: str
    image_id: str
    workdir: str
    env: dict[str, str] = field(default_factory=dict)
    user: str = ""
    built: bool = False
    """True when this call built it; False when it was cached (or given)."""
    build_seconds: float = 0.0


@dataclass(frozen=True)
class BuildSource:
    """Where an image comes from: a build context and Dockerfile, or an image name."""

    context: Path | None = None
    dockerfile: Path | None = None
    image: str | None = None


def content_hash(context: Path) -> str:
    """A short hash of every file under ``context`` (relative path and bytes), in path order."""
    digest = hashlib.sha256()
    for path in sorted(p for p in context.rglob("*") if p.is_file() or p.is_symlink()):
        digest.update(str(path.relative_to(context)).encode() + b"\0")
        digest.update(path.read_bytes() if path.is_file() else str(path.readlink()).encode())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def tag_for(name: str, context: Path, dockerfile: Path) -> str:
    """``agentenv-harbor/<name>:<hash of the context and the Dockerfile>``."""
    slug = re.sub(r"[^a-z0-9_.-]+", "-", name.lower()).strip("-._") or "task"
    digest = hashlib.sha256((content_hash(context) + hashlib.sha256(dockerfile.read_bytes()).hexdigest()).encode())
    return f"{REPOSITORY}/{slug}:{digest.hexdigest()[:16]}"


def source_of(environment: Path, docker_image: str | None) -> BuildSource:
    """The environment's compose file's service ``main`` (whose build is often the folder's Dockerfile), else its
    Dockerfile, else ``docker_image``.

    Raises:
        ImageError: the compose file is unreadable or has no usable service ``main``.
    """
    compose = environment / "docker-compose.yaml"
    if compose.is_file():
        return _compose_main(compose)
    if (environment / "Dockerfile").is_file():
        return BuildSource(context=environment, dockerfile=environment / "Dockerfile")
    if docker_image is None:
        raise ImageError(f"{environment}: no Dockerfile, no docker-compose.yaml and no docker_image")
    return BuildSource(image=docker_image)


def _compose_main(compose: Path) -> BuildSource:
    main = _compose_services(compose).get("main")
    if main is None:
        raise ImageError(f"{compose}: no service 'main'")
    return _service_source(compose, "main", main)


@dataclass(frozen=True)
class Sidecar:
    """A compose service beside ``main``: started in main's network namespace, so each reaches the others on
    loopback, by its service name (an ``/etc/hosts`` line on main's container, which they share)."""

    name: str
    source: BuildSource
    command: tuple[str, ...] | None = None
    entrypoint: tuple[str, ...] | None = None
    environment: tuple[tuple[str, str], ...] = ()
    health: tuple[str, ...] | None = None
    """Its compose ``healthcheck``'s test, as the command to run in it (``CMD-SHELL``: through ``/bin/sh -c``);
    the agent waits until it passes."""
    health_seconds: float = 60.0
    """How long it has to pass: its start period and its retries' intervals, at least 60 s."""


SIDECAR_KEYS = {"build", "image", "command", "entrypoint", "environment", "depends_on", "ports", "expose",
                "container_name", "restart", "healthcheck", "labels"}
"""The keys a sidecar may have; ``ports`` and ``expose`` need nothing in a shared network namespace,
``depends_on`` orders the starts, ``healthcheck`` is waited for before the agent starts, and ``restart``,
``container_name`` and ``labels`` are read and not applied."""


def sidecars_of(environment: Path) -> list[Sidecar]:
    """The compose file's services beside ``main``, in the order their ``depends_on`` allows (none without one).

    Raises:
        ImageError: the compose file is unreadable, or a service asks for what a shared network namespace
            cannot give (``volumes``, ``networks``, ``network_mode``, ...), named with the key.
    """
    compose = environment / "docker-compose.yaml"
    if not compose.is_file():
        return []
    services = _compose_services(compose)
    found = []
    for name in _start_order({k: v for k, v in services.items() if k != "main"}):
        spec = services[name]
        unsupported = sorted(set(spec) - SIDECAR_KEYS)
        if unsupported:
            raise ImageError(f"{compose}: service '{name}': {', '.join(unsupported)} not supported (a sidecar runs "
                             "in the main container's network namespace, with no volumes or networks of its own)")
        health, seconds = _health(spec.get("healthcheck"))
        found.append(Sidecar(name=name, source=_service_source(compose, name, spec),
                             command=_words(spec.get("command")), entrypoint=_words(spec.get("entrypoint")),
                             environment=tuple(_environment(spec.get("environment")).items()),
                             health=health, health_seconds=seconds))
    return found


def _health(check: Any) -> tuple[tuple[str, ...] | None, float]:
    """A compose healthcheck's test as the command to run (``CMD`` words as they are, ``CMD-SHELL`` or a string
    through ``/bin/sh -c``), and how long it may take to pass; none when there is none or it is disabled."""
    if not isinstance(check, dict) or check.get("disable") or check.get("test") in (None, ["NONE"]):
        return None, 0.0
    test = check["test"]
    command: tuple[str, ...]
    if isinstance(test, str):
        command = ("/bin/sh", "-c", test)
    elif test and test[0] == "CMD-SHELL":
        command = ("/bin/sh", "-c", " ".join(map(str, test[1:])))
    else:
        command = tuple(map(str, test[1:] if test and test[0] == "CMD" else test))
    budget = _seconds(check.get("start_period")) + (int(check.get("retries", 3)) + 1) * max(
        _seconds(check.get("interval")) or 30.0, 1.0)
    return command, max(60.0, budget)


def _seconds(value: Any) -> float:
    """A compose duration (``30s``, ``1m30s``, ``500ms``, or a number of seconds)."""
    if value is None:
        return 0.0
    if isinstance(value, (int, float)):
        return float(value)
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 1e-6}
    return sum(float(n) * units[u] for n, u in re.findall(r"([\d.]+)(ms|us|h|m|s)", str(value)))


def _compose_services(compose: Path) -> dict[str, dict[str, Any]]:
    try:
        data = yaml.safe_load(compose.read_text(encoding="utf-8"))
        services = data["services"]
    except (OSError, yaml.YAMLError, KeyError, TypeError) as exc:
        raise ImageError(f"{compose}: no readable services ({exc})") from None
    if not isinstance(services, dict) or not all(isinstance(v, dict) for v in services.values()):
        raise ImageError(f"{compose}: services must be a mapping of service names to settings")
    return {str(k): v for k, v in services.items()}


def _service_source(compose: Path, name: str, spec: dict[str, Any]) -> BuildSource:
    build = spec.get("build")
    if build is None:
        if not isinstance(spec.get("image"), str):
            raise ImageError(f"{compose}: service '{name}' has neither build nor image")
        return BuildSource(image=spec["image"])
    context = compose.parent / (build if isinstance(build, str) else build.get("context", "."))
    dockerfile = context / ("Dockerfile" if isinstance(build, str) else build.get("dockerfile", "Dockerfile"))
    return BuildSource(context=context, dockerfile=dockerfile)


def _start_order(services: dict[str, dict[str, Any]]) -> list[str]:
    """Service names, each after those it ``depends_on`` (``main`` is started first, always)."""
    order: list[str] = []

    def visit(name: str, seen: tuple[str, ...]) -> None:
        if name in order or name not in services:
            return
        if name in seen:
            raise ImageError(f"compose services depend on each other in a cycle: {' -> '.join((*seen, name))}")
        needs = services[name].get("depends_on") or []
        for other in sorted(needs if isinstance(needs, (list, dict)) else []):
            visit(str(other), (*seen, name))
        order.append(name)

    for name in sorted(services):
        visit(name, ())
    return order


def _words(value: Any) -> tuple[str, ...] | None:
    """A compose command or entrypoint: a list as it is, a string split as a shell would."""
    if value is None:
        return None
    return tuple(map(str, value)) if isinstance(value, list) else tuple(shlex.split(str(value)))


def _environment(value: Any) -> dict[str, str]:
    """A compose ``environment``: a mapping, or a list of ``KEY=value``."""
    if isinstance(value, dict):
        return {str(k): "" if v is None else str(v) for k, v in value.items()}
    if isinstance(value, list):
        return {key: rest for key, _, rest in (str(item).partition("=") for item in value)}
    return {}


async def ensure_image(name: str, source: BuildSource, *, build_timeout: float) -> ImageConfig:
    """The image, built unless a build of the same content is already there (or pulled when named and absent).

    Raises:
        ImageError: the build failed (with the end of its log), timed out, or the image cannot be had.
    """
    if source.image is not None:
        return await _named(source.image)
    assert source.context is not None and source.dockerfile is not None
    tag = tag_for(name, source.context, source.dockerfile)
    lock = _locks.setdefault(tag, asyncio.Lock())
    async with lock:
        found = await inspect_image(tag)
        if found is not None:
            return found
        loop = asyncio.get_running_loop()
        started = loop.time()
        await _build(tag, source.context, source.dockerfile, build_timeout)
        built = await inspect_image(tag)
    if built is None:
        raise ImageError(f"docker built {tag} but cannot inspect it")
    return ImageConfig(**{**built.__dict__, "built": True, "build_seconds": loop.time() - started})


async def _build(tag: str, context: Path, dockerfile: Path, timeout: float) -> None:
    args = ["docker", "build", "--force-rm", "--network", "host", "--label", f"{CACHE_LABEL}=1", "-t", tag, "-f", str(dockerfile),
            str(context)]
    try:
        code, out, err = await docker_cli(args, timeout=timeout)
    except TimeoutError:
        raise ImageError(f"building {tag} did not finish within build_timeout_sec={timeout:g}") from None
    if code != 0:
        log = (out + err)[-_LOG_TAIL:]
        raise ImageError(f"building {tag} from {dockerfile} failed (docker build exited {code}):\n{log}")


async def _named(image: str) -> ImageConfig:
    found = await inspect_image(image)
    if found is not None:
        return found
    try:
        code, _, err = await docker_cli(["docker", "pull", image], timeout=_PULL_TIMEOUT)
    except TimeoutError:
        code, err = 124, "timed out"
    found = await inspect_image(image) if code == 0 else None
    if found is None:
        raise ImageError(f"the image {image} is not on the local daemon and cannot be pulled: "
                         f"{(err.strip().splitlines() or ['no answer'])[-1]}")
    return found


_inspected: dict[str, ImageConfig] = {}


async def inspect_image(tag: str, *, remembered: bool = False) -> ImageConfig | None:
    """The image's id and run settings; None when the daemon does not have it. ``remembered``: a tag of this
    runner's (its content hash in it) seen before is not asked again (it cannot name other content; an image
    removed since is docker's error at the next start)."""
    if remembered and tag in _inspected:
        return _inspected[tag]
    code, out, _ = await docker_cli(["docker", "image", "inspect", tag], timeout=_INSPECT_TIMEOUT)
    if code != 0:
        return None
    info = json.loads(out)[0]
    config = info.get("Config") or {}
    env = dict(item.split("=", 1) for item in config.get("Env") or [] if "=" in item)
    found = ImageConfig(tag=tag, image_id=info["Id"], workdir=config.get("WorkingDir") or "/", env=env,
                        user=config.get("User") or "")
    if tag.startswith(f"{REPOSITORY}/"):
        _inspected[tag] = found
    return found
