"""``prefect-agentenv env``: register, list and show environments (AgentEnvironment blocks)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, NoReturn

import typer
from prefect.client.orchestration import get_client
from prefect.exceptions import ObjectNotFound
from pydantic import SecretStr, ValidationError

from prefect_agentenv.blocks.environment import AgentEnvironment
from prefect_agentenv.envs.catalog import REFERENCE_ENVS
from prefect_agentenv.exceptions import AgentEnvError, ConfigurationError
from prefect_agentenv.runtime.resolve import ResolvedEnv, is_block_name, resolve_env

env_app = typer.Typer(
    help="Register, list and show environments (AgentEnvironment blocks and the reference envs).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

MASK = "********"
_SECRET_FIELDS = {path.split(".")[0] for path in AgentEnvironment.model_json_schema()["secret_fields"]}
_PLAIN_ARG = re.compile(r"^[\w@%+=:,./{}-]+$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class UsageProblem(Exception):
    """A mistake in the command line: reported without a traceback, exit code 2."""


@contextmanager
def _reported() -> Iterator[None]:
    """Turn every failure into one line on stderr and an exit code, never a traceback."""
    try:
        yield
    except typer.Exit:
        raise
    except (UsageProblem, ConfigurationError) as exc:
        _fail(str(exc), 2)
    except AgentEnvError as exc:
        _fail(str(exc), 1)
    except Exception as exc:  # the CLI promise: an error message, not a stack trace
        _fail(f"{type(exc).__name__}: {exc}", 1)


def _fail(message: str, code: int) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


@env_app.command("register")
def register(
    name: Annotated[str, typer.Argument(help="Env id (lowercase letters, digits, dashes), e.g. email.")],
    command: Annotated[str | None, typer.Option(
        "--command", help='Command line of a local server, with {port} (and {host}): "python -m my_env --port {port}".')] = None,
    image: Annotated[str | None, typer.Option("--image", help="Docker image of the server.")] = None,
    url: Annotated[str | None, typer.Option("--url", help="Base URL of a server that is already running.")] = None,
    version: Annotated[str, typer.Option("--version", help="Version reported in the run context.")] = "0.0.0",
    env: Annotated[list[str] | None, typer.Option("--env", help="K=V environment variable; repeat for more.")] = None,
    secret_env: Annotated[list[str] | None, typer.Option(
        "--secret-env", help="K=V secret environment variable, or K to take the value of $K now; repeat for more.")] = None,
    startup_timeout: Annotated[float, typer.Option("--startup-timeout", min=0.001,
                                                   help="Seconds the server may take to become ready.")] = 60.0,
    container_port: Annotated[int, typer.Option("--container-port", min=1, max=65535,
                                                help="Port the server listens on inside its container.")] = 8000,
    description: Annotated[str | None, typer.Option("--description", help="What the env offers.")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing registration.")] = False,
) -> None:
    """Register how to launch an env, as an AgentEnvironment block named NAME."""
    with _reported():
        block = build_block(name, command=command, image=image, url=url, version=version, env=env or [],
                            secret_env=secret_env or [], startup_timeout=startup_timeout,
                            container_port=container_port, description=description)
        asyncio.run(_save(block, name, overwrite=overwrite))
        typer.echo(f"registered env {name!r} (AgentEnvironment block {name!r}): {block.to_launch_spec().describe()}")
        if name in REFERENCE_ENVS:
            typer.echo(f"note: this replaces the reference env {name!r} for runs that can reach this Prefect API")


@env_app.command("list")
def list_envs() -> None:
    """List registered envs (blocks) and the reference envs shipped in the package."""
    with _reported():
        blocks = asyncio.run(_read_blocks())
        rows = [("NAME", "SOURCE", "VERSION", "LAUNCH")]
        for block_name, block in sorted(blocks.items()):
            source = "block (overrides reference)" if block_name in REFERENCE_ENVS else "block"
            rows.append((block_name, source, block.version, block.to_launch_spec().describe()))
        for env_id, reference in sorted(REFERENCE_ENVS.items()):
            if env_id not in blocks:
                rows.append((env_id, "reference", reference.version, f"python -m {reference.module}"))
        widths = [max(len(row[i]) for row in rows) for i in range(3)]
        for row in rows:
            typer.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[3])


@env_app.command("show")
def show(
    name: Annotated[str, typer.Argument(help="Env id.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (secrets still masked).")] = False,
) -> None:
    """Show how an env is launched; secret values are masked."""
    with _reported():
        resolved = asyncio.run(resolve_env(name, use_blocks=True))
        view = describe(resolved)
        if as_json:
            typer.echo(json.dumps(view, indent=2))
            return
        for key, value in view.items():
            if isinstance(value, dict):
                typer.echo(f"{key}:" + ("" if value else " {}"))
                for k, v in value.items():
                    typer.echo(f"  {k}={v}")
            elif isinstance(value, list):
                typer.echo(f"{key}: {_join_argv(value)}")
            elif value is not None:
                typer.echo(f"{key}: {value}")


def build_block(name: str, *, command: str | None, image: str | None, url: str | None, version: str,
                env: list[str], secret_env: list[str], startup_timeout: float, container_port: int,
                description: str | None) -> AgentEnvironment:
    """Check the command line and turn it into a block.

    Raises:
        UsageProblem: what is wrong and how to write it instead.
    """
    if not is_block_name(name):
        raise UsageProblem(f"{name!r} cannot name an env: use lowercase letters, digits and dashes (e.g. 'my-env')")
    given = [flag for flag, value in (("--command", command), ("--image", image), ("--url", url)) if value]
    if len(given) != 1:
        raise UsageProblem("give exactly one of --command, --image or --url" + (f" (got {', '.join(given)})" if given else ""))
    env_vars = _pairs(env, "--env")
    secrets = _pairs(secret_env, "--secret-env", from_environment=True)
    argv: list[str] | None = None
    if command:
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise UsageProblem(f"--command cannot be split into arguments: {exc}") from None
        if not any("{port}" in part for part in [*argv, *env_vars.values()]):
            raise UsageProblem('--command must contain {port}, where the launcher puts the free port it picked, '
                               'e.g. --command "python -m my_env --host {host} --port {port}"')
    if url and not url.startswith(("http://", "https://")):
        raise UsageProblem(f"--url must start with http:// or https://, got {url!r}")
    try:
        return AgentEnvironment(version=version, command=argv, image=image, url=url, env=env_vars,
                                secret_env={k: SecretStr(v) for k, v in secrets.items()},
                                startup_timeout_seconds=startup_timeout, container_port=container_port,
                                description=description)
    except ValidationError as exc:
        raise UsageProblem("; ".join(e["msg"] for e in exc.errors())) from None


def describe(resolved: ResolvedEnv) -> dict[str, Any]:
    """What ``env show`` prints, with secret values masked."""
    spec = resolved.spec
    return {
        "name": resolved.env_id,
        "source": resolved.source,
        "version": resolved.version,
        "description": resolved.description,
        "command": spec.command,
        "image": spec.image,
        "container_port": spec.container_port if spec.image else None,
        "url": spec.url,
        "env": dict(spec.env),
        "secret_env": {k: MASK for k in spec.secret_env},
        "startup_timeout_seconds": spec.startup_timeout_seconds,
        "ready_path": spec.ready_path,
        "mcp_path": spec.mcp_path,
    }


def _join_argv(argv: list[str]) -> str:
    """A command line to read (and paste): quoted where needed, but ``{port}`` left bare."""
    return " ".join(part if _PLAIN_ARG.match(part) else shlex.quote(part) for part in argv)


def _pairs(items: list[str], flag: str, *, from_environment: bool = False) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep and from_environment:
            if key not in os.environ:  # the value is taken from the caller's shell, never echoed
                raise UsageProblem(f"{flag} {key}: ${key} is not set; give {key}=VALUE or export it first")
            value = os.environ[key]
        elif not sep:
            raise UsageProblem(f"{flag} expects KEY=VALUE, got {item!r}")
        if not _ENV_NAME.match(key):
            raise UsageProblem(f"{flag}: {key!r} is not a valid environment variable name")
        pairs[key] = value
    return pairs


async def _save(block: AgentEnvironment, name: str, *, overwrite: bool) -> None:
    try:
        await block.asave(name, overwrite=overwrite)
    except ValueError as exc:
        if "already in use" in str(exc):
            raise UsageProblem(f"env {name!r} is already registered; add --overwrite to replace it") from None
        raise


async def _read_blocks() -> dict[str, AgentEnvironment]:
    async with get_client() as client:
        try:
            documents = await client.read_block_documents_by_type(
                AgentEnvironment.get_block_type_slug(), include_secrets=False)
        except ObjectNotFound:
            return {}  # the block type is registered by the first save
    blocks: dict[str, AgentEnvironment] = {}
    for document in documents:
        if document.is_anonymous or not document.name:
            continue
        # Secrets come back obfuscated (not in their field's shape); the listing does not show them.
        data = {k: v for k, v in document.data.items() if k not in _SECRET_FIELDS}
        try:
            blocks[document.name] = AgentEnvironment.model_validate(data)
        except ValidationError as exc:
            typer.echo(f"warning: block {document.name!r} is invalid: {exc.errors()[0]['msg']}", err=True)
    return blocks
