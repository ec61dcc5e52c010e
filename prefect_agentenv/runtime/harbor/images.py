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
from dataclasses import dataclass, field
from pathlib import Path

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
    """The environment's Dockerfile, else its compose file's service ``main``, else ``docker_image``.

    Raises:
        ImageError: the compose file is unreadable or has no usable service ``main``.
    """
    if (environment / "Dockerfile").is_file():
        return BuildSource(context=environment, dockerfile=environment / "Dockerfile")
    compose = environment / "docker-compose.yaml"
    if compose.is_file():
        return _compose_main(compose)
    if docker_image is None:
        raise ImageError(f"{environment}: no Dockerfile, no docker-compose.yaml and no docker_image")
    return BuildSource(image=docker_image)


def _compose_main(compose: Path) -> BuildSource:
    try:
        data = yaml.safe_load(compose.read_text(encoding="utf-8"))
        main = data["services"]["main"]
    except (OSError, yaml.YAMLError, KeyError, TypeError) as exc:
        raise ImageError(f"{compose}: no readable service 'main' ({exc})") from None
    others = sorted(set(data["services"]) - {"main"})
    if others:
        raise ImageError(f"{compose}: services {', '.join(others)} beside 'main' are not supported "
                         "(sidecars need compose, which this runner does not use)")
    build = main.get("build")
    if build is None:
        if not isinstance(main.get("image"), str):
            raise ImageError(f"{compose}: service 'main' has neither build nor image")
        return BuildSource(image=main["image"])
    context = compose.parent / (build if isinstance(build, str) else build.get("context", "."))
    dockerfile = context / ("Dockerfile" if isinstance(build, str) else build.get("dockerfile", "Dockerfile"))
    return BuildSource(context=context, dockerfile=dockerfile)


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
