"""``prefect-agentenv agent``: register, list and show agents (A2AAgent blocks), and install the
coding-agent harnesses AgentEnv wraps."""

from __future__ import annotations

import asyncio
import enum
from pathlib import Path
from typing import Annotated, Literal

import typer

from prefect_agentenv.agents.catalog import REFERENCE_AGENTS
from prefect_agentenv.blocks.agent import A2A_CARD_PATH, A2AAgent
from prefect_agentenv.blocks.secret_env import secret_dict
from prefect_agentenv.commands import _harnesses
from prefect_agentenv.commands._prefect_server import use_prefect_server
from prefect_agentenv.commands._registry import (
    LaunchBlock,
    Noun,
    UsageProblem,
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
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.resolution.servers import ResolvedAgent, resolve_agent
from prefect_agentenv.runtime.confinement.confined import (
    DEFAULT_CPU_SECONDS,
    DEFAULT_MEMORY_MB,
    DEFAULT_PROCESSES,
    confine_by_default,
    network_of,
    unconfined_record,
)
from prefect_agentenv.runtime.confinement.disk import DEFAULT_DISK_MB
from prefect_agentenv.runtime.launch.base import CONFINED_KIND, LaunchSpec, NetworkAllow
from prefect_agentenv.settings import get_settings

agent_app = typer.Typer(
    help="Register, list, show and check agents (A2AAgent blocks, the reference agents, the installed "
         "coding-agent harnesses); install a harness by name.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

AGENT = Noun("agent", "an", A2AAgent, REFERENCE_AGENTS)


class Confinement(str, enum.Enum):
    """``--confinement`` values (docs/security.md)."""

    confined = "confined"
    none = "none"


@agent_app.command("register")
def register(
    name: Annotated[str, typer.Argument(help="Agent id (lowercase letters, digits, dashes), e.g. claude-code.")],
    command: Annotated[str | None, typer.Option(
        "--command", help='Command line of a local agent, with {port} (and {host}): "python -m my_agent --port {port}".')] = None,
    image: Annotated[str | None, typer.Option("--image", help="Docker image of the agent.")] = None,
    url: Annotated[str | None, typer.Option("--url", help="Base URL of an agent that is already running.")] = None,
    version: Annotated[str, typer.Option("--version", help="Version reported in the run context.")] = "0.0.0",
    env: Annotated[list[str] | None, typer.Option("--env", help="K=V environment variable; repeat for more.")] = None,
    secret_env: Annotated[list[str] | None, typer.Option(
        "--secret-env", help="K=V secret environment variable, or K to take the value of $K now; repeat for more.")] = None,
    startup_timeout: Annotated[float, typer.Option("--startup-timeout", min=0.001,
                                                   help="Seconds the agent may take to answer its card.")] = 60.0,
    card_path: Annotated[str, typer.Option("--card-path", help="Path of the agent's A2A card.")] = A2A_CARD_PATH,
    container_port: Annotated[int, typer.Option("--container-port", min=1, max=65535,
                                                help="Port the agent listens on inside its container.")] = 8000,
    description: Annotated[str | None, typer.Option("--description", help="What the agent is.")] = None,
    install_path: Annotated[list[str] | None, typer.Option(
        "--install-path", help="Folder the agent's code lives in, visible read-only when it runs confined; repeat for "
                               "more.")] = None,
    confinement: Annotated[Confinement | None, typer.Option(
        "--confinement", help="none runs a local agent unconfined (recorded); confined by default.")] = None,
    network: Annotated[list[str] | None, typer.Option(
        "--network", help="Widen a confined agent's network (recorded): host:port on the loopback it may reach too "
                          "(repeat for more), or public for the host's whole network. Default: its model and its "
                          "envs' MCP paths only.")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing registration.")] = False,
) -> None:
    """Register how to launch an agent, as an A2AAgent block named NAME."""
    with reported():
        block, resolved = build_block(name, command=command, image=image, url=url, version=version, env=env or [],
                            secret_env=secret_env or [], startup_timeout=startup_timeout, card_path=card_path,
                            container_port=container_port, description=description,
                            install_paths=install_path or [], confinement=confinement.value if confinement else None,
                            network=network or [])
        register_block(block, name, noun=AGENT, overwrite=overwrite, resolved=resolved)


@agent_app.command("list")
def list_agents() -> None:
    """List registered agents (blocks), the reference agents shipped in the package, and the
    coding-agent harnesses with the versions installed; each with how it runs (confinement, network, limits)."""
    with reported():
        default = f"  [{confinement_summary(None)}]"
        harnesses = [(name, source, version, f"{launch}{default}")
                     for name, source, version, launch in _harnesses.listing_rows()]
        list_blocks(AGENT, harnesses, launch=_listed, reference_note=default)


def _listed(block: LaunchBlock) -> str:
    spec = block.to_launch_spec()
    return f"{spec.describe()}  [{confinement_summary(confine_by_default(spec, kind_given=block.kind is not None))}]"


@agent_app.command("remove")
def remove(name: Annotated[str, typer.Argument(help="Agent id of a registration (an A2AAgent block).")]) -> None:
    """Remove a registered agent (its A2AAgent block). Exit 2 when NAME is not registered."""
    with reported():
        remove_block(AGENT, name)


@agent_app.command("install")
def install(
    names: Annotated[list[str] | None, typer.Argument(
        help="Harnesses to install: opencode, codex, pi, openhands, claude-code, gemini.")] = None,
    every: Annotated[bool, typer.Option("--all", help="Install every harness.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Install again even when the pinned versions are there.")] = False,
) -> None:
    """Install coding-agent harnesses by name, each into a folder of its own (AgentEnv's A2A wrapper,
    its CLI from npm, its Python from PyPI, all pinned); one already installed is left as it is.
    Then `a2a_agent_id: NAME` deploys it. Exit 0 when all are installed, 1 when one failed."""
    with reported():
        code = _harnesses.install(names or [], every=every, force=force)
    raise typer.Exit(code)


@agent_app.command("show")
def show(
    name: Annotated[str, typer.Argument(help="Agent id.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (secrets still masked).")] = False,
) -> None:
    """Show how an agent is launched; secret values are masked."""
    with reported():
        use_prefect_server()
        echo_view(describe(asyncio.run(resolve_agent(name, use_blocks=True))), as_json=as_json)


@agent_app.command("check")
def check(
    name: Annotated[str, typer.Argument(help="Agent id (a registered block or a reference agent).")],
    prompt: Annotated[str | None, typer.Option("--prompt", help="The probe message sent to the agent.")] = None,
    with_env: Annotated[str | None, typer.Option(
        "--with-env", help="Deploy this env first and give it to the agent, as a task's env_ids would.")] = None,
    startup_timeout: Annotated[float | None, typer.Option("--startup-timeout", min=0.001,
                                                          help="Seconds the agent may take to start.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (with the card as served).")] = False,
) -> None:
    """Deploy the agent, probe its card, A2A endpoint and extensions, print what works and what it lacks,
    stop it. Exit 0 when nothing failed, 1 when a probe or the deploy failed, 2 when NAME is unknown."""
    with reported():
        use_prefect_server()
        asyncio.run(resolve_agent(name, use_blocks=True))
        code = run_check("agent", name, prompt=prompt, startup_timeout=startup_timeout, with_env=with_env,
                         as_json=as_json)
    raise typer.Exit(code)


def build_block(name: str, *, command: str | None, image: str | None, url: str | None, version: str,
                env: list[str], secret_env: list[str], startup_timeout: float, card_path: str,
                container_port: int, description: str | None, install_paths: list[str] | None = None,
                confinement: Literal["confined", "none"] | None = None,
                network: list[str] | None = None) -> tuple[A2AAgent, tuple[str, ...]]:
    """Check the command line and turn it into a block; with what of its command was resolved (shown).

    Raises:
        UsageProblem: what is wrong and how to write it instead.
    """
    options = parse_launch_options(AGENT, name, command=command, image=image, url=url, env=env,
                                   secret_env=secret_env)
    if not card_path.startswith("/"):
        raise UsageProblem(f"--card-path must start with /, got {card_path!r} (the default is {A2A_CARD_PATH})")
    with invalid_as_usage():
        block = A2AAgent(version=version, command=options.command, image=options.image, url=options.url,
                         env=options.env, secret_env=secret_dict(options.secret_env),
                         startup_timeout_seconds=startup_timeout, card_path=card_path, container_port=container_port,
                         description=description, install_paths=[str(Path(p).resolve()) for p in install_paths or []],
                         confinement=confinement, network=_network(network or []))
    return block, options.resolved


def _network(values: list[str]) -> Literal["public"] | NetworkAllow | None:
    """``--network`` as the block's field: nothing, ``public`` alone, or the endpoints to allow.

    Raises:
        UsageProblem: ``public`` given with endpoints, or an endpoint that is not host:port.
    """
    if not values:
        return None
    if "public" in values:
        if len(values) > 1:
            raise UsageProblem("--network public is the host's whole network: give it alone, not with host:port")
        return "public"
    with invalid_as_usage():
        return NetworkAllow(allow=values)


def describe(resolved: ResolvedAgent) -> JsonObject:
    """What ``agent show`` prints, with secret values masked: how it launches and how it runs."""
    return {
        "name": resolved.a2a_agent_id,
        "source": resolved.source,
        "version": resolved.version,
        "description": resolved.description,
        **launch_view(resolved.spec),
        "card_path": resolved.spec.ready_path,
        **confinement_view(resolved.spec),
    }


def confinement_view(spec: LaunchSpec) -> JsonObject:
    """How a local agent runs (docs/security.md), defaults said so: its confinement, install paths, network and
    limits; for an image or a URL, what isolates it instead."""
    if spec.url is not None:
        return {"confinement": "none here (already running; the runner never starts it)"}
    if spec.image is not None:
        return {"confinement": "its container (image mode)"}
    if spec.kind != CONFINED_KIND:
        return {"confinement": f"none ({unconfined_record(spec).opted_out})"}
    explicit = spec.confinement == "confined"
    network = network_of(spec)
    return {
        "confinement": "confined" if explicit else "confined (default)",
        "install_paths": [*spec.install_paths],
        "network": (network if isinstance(network, str) else {"allow": [*network.allow]} if network is not None
                    else "its model and its envs' MCP paths (default)"),
        "limits": {name: f"{value}" if given else f"{value} (default)" for name, value, given in _limits(spec)},
    }


def _limits(spec: LaunchSpec) -> list[tuple[str, int, bool]]:
    return [("memory_limit_mb", spec.memory_limit_mb or DEFAULT_MEMORY_MB, spec.memory_limit_mb is not None),
            ("process_limit", spec.process_limit or DEFAULT_PROCESSES, spec.process_limit is not None),
            ("cpu_limit_seconds", spec.cpu_limit_seconds or DEFAULT_CPU_SECONDS, spec.cpu_limit_seconds is not None),
            ("disk_limit_mb", spec.disk_limit_mb or DEFAULT_DISK_MB, spec.disk_limit_mb is not None)]


def confinement_summary(spec: LaunchSpec | None) -> str:
    """One cell of ``agent list``: confinement, then only what is not the default (``None``: a harness or a
    reference agent, confined by default where this machine confines)."""
    if spec is None:
        return "confined (default)" if get_settings().agent_confinement != "none" else "none (setting)"
    parts = [str(confinement_view(spec)["confinement"])]
    network = network_of(spec) if spec.kind == CONFINED_KIND else None
    if network == "public":
        parts.append("network public")
    elif isinstance(network, NetworkAllow):
        parts.append(f"network allow {','.join(network.allow)}")
    parts += [f"install {path}" for path in spec.install_paths]
    parts += [f"{name}={value}" for name, value, given in _limits(spec) if given]
    return "; ".join(parts)
