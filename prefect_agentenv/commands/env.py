"""``prefect-agentenv env``: register, list and show environments (AgentEnvironment blocks)."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from prefect_agentenv.blocks.environment import AgentEnvironment
from prefect_agentenv.blocks.secret_env import secret_dict
from prefect_agentenv.commands._prefect_server import use_prefect_server
from prefect_agentenv.commands._registry import (
    Noun,
    echo_view,
    invalid_as_usage,
    launch_view,
    list_blocks,
    parse_launch_options,
    register_block,
    remove_block,
    reported,
)
from prefect_agentenv.commands.check import run_check
from prefect_agentenv.envs.catalog import REFERENCE_ENVS
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.resolution.servers import ResolvedEnv, resolve_env

env_app = typer.Typer(
    help="Register, list, show and check environments (AgentEnvironment blocks and the reference envs).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

ENV = Noun("env", "an", AgentEnvironment, REFERENCE_ENVS)


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
    with reported():
        block, resolved = build_block(name, command=command, image=image, url=url, version=version, env=env or [],
                            secret_env=secret_env or [], startup_timeout=startup_timeout,
                            container_port=container_port, description=description)
        register_block(block, name, noun=ENV, overwrite=overwrite, resolved=resolved)


@env_app.command("list")
def list_envs() -> None:
    """List registered envs (blocks) and the reference envs shipped in the package."""
    with reported():
        list_blocks(ENV)


@env_app.command("remove")
def remove(name: Annotated[str, typer.Argument(help="Env id of a registration (an AgentEnvironment block).")]) -> None:
    """Remove a registered env (its AgentEnvironment block). Exit 2 when NAME is not registered."""
    with reported():
        remove_block(ENV, name)


@env_app.command("show")
def show(
    name: Annotated[str, typer.Argument(help="Env id.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (secrets still masked).")] = False,
) -> None:
    """Show how an env is launched; secret values are masked."""
    with reported():
        use_prefect_server()
        echo_view(describe(asyncio.run(resolve_env(name, use_blocks=True))), as_json=as_json)


@env_app.command("check")
def check(
    name: Annotated[str, typer.Argument(help="Env id (a registered block or a reference env).")],
    startup_timeout: Annotated[float | None, typer.Option("--startup-timeout", min=0.001,
                                                          help="Seconds the env may take to start.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (with the card as served).")] = False,
) -> None:
    """Deploy the env, probe its card, data plane, MCP tools and extensions, print what works and what it
    lacks, stop it. Exit 0 when nothing failed, 1 when a probe or the deploy failed, 2 when NAME is unknown."""
    with reported():
        use_prefect_server()
        asyncio.run(resolve_env(name, use_blocks=True))
        code = run_check("env", name, startup_timeout=startup_timeout, as_json=as_json)
    raise typer.Exit(code)


def build_block(name: str, *, command: str | None, image: str | None, url: str | None, version: str,
                env: list[str], secret_env: list[str], startup_timeout: float, container_port: int,
                description: str | None) -> tuple[AgentEnvironment, tuple[str, ...]]:
    """Check the command line and turn it into a block; with what of its command was resolved (shown).

    Raises:
        UsageProblem: what is wrong and how to write it instead.
    """
    options = parse_launch_options(ENV, name, command=command, image=image, url=url, env=env, secret_env=secret_env)
    with invalid_as_usage():
        block = AgentEnvironment(version=version, command=options.command, image=options.image, url=options.url,
                                 env=options.env, secret_env=secret_dict(options.secret_env),
                                 startup_timeout_seconds=startup_timeout, container_port=container_port,
                                 description=description)
    return block, options.resolved


def describe(resolved: ResolvedEnv) -> JsonObject:
    """What ``env show`` prints, with secret values masked."""
    spec = resolved.spec
    return {
        "name": resolved.env_id,
        "source": resolved.source,
        "version": resolved.version,
        "description": resolved.description,
        **launch_view(spec),
        "ready_path": spec.ready_path,
        "mcp_path": spec.mcp_path,
    }
