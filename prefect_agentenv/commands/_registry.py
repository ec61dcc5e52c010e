"""What ``env`` and ``agent`` share: launch options, saving, listing and showing their blocks.

Both nouns register a launch source (``--command``/``--image``/``--url``) with env vars and
secrets as a Prefect block, list blocks next to the reference servers shipped in the package,
and show one entry with its secrets masked. Only the nouns and a few fields differ, so the
command modules keep their own typer signatures and call these helpers for the rest.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
from collections.abc import Callable, Generator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn, Protocol, TypeVar

import typer
from prefect.blocks.core import Block
from prefect.client.orchestration import get_client
from prefect.exceptions import ObjectNotFound
from pydantic import SecretStr, ValidationError

from prefect_agentenv.blocks.agent import A2AAgent
from prefect_agentenv.blocks.environment import AgentEnvironment
from prefect_agentenv.commands._prefect_server import use_prefect_server
from prefect_agentenv.exceptions import AgentEnvError, ConfigurationError
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.resolution.block_lookup import is_block_name
from prefect_agentenv.runtime.confinement.command_needs import resolve_at_registration
from prefect_agentenv.runtime.launch.base import LaunchSpec

MASK = "********"
_PLAIN_ARG = re.compile(r"^[\w@%+=:,./{}-]+$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

_B = TypeVar("_B", bound=Block)

LaunchBlock = A2AAgent | AgentEnvironment
"""The blocks ``env`` and ``agent`` register."""


class Reference(Protocol):
    """A reference server shipped in the package, as ``list`` shows it."""

    @property
    def version(self) -> str: ...

    @property
    def module(self) -> str: ...


class UsageProblem(Exception):
    """A mistake in the command line: reported without a traceback, exit code 2."""


@contextmanager
def reported() -> Generator[None]:
    """Turn every failure into one line on stderr and an exit code, never a traceback."""
    try:
        yield
    except typer.Exit:
        raise
    except (UsageProblem, ConfigurationError) as exc:
        fail(str(exc), 2)
    except AgentEnvError as exc:
        fail(str(exc), 1)
    except Exception as exc:  # the CLI promise: an error message, not a stack trace
        fail(f"{type(exc).__name__}: {exc}", 1)


def fail(message: str, code: int) -> NoReturn:
    """Print ``error: message`` on stderr and exit with ``code``."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


@dataclass(frozen=True)
class Noun:
    """What one sub-command registers (``env``, ``agent``), and how its messages name it."""

    word: str
    """The sub-command and the word in messages."""
    article: str
    """``a`` or ``an``, as English wants before ``word``."""
    block_type: type[LaunchBlock]
    """The block a registration is saved as."""
    references: Mapping[str, Reference]
    """The reference servers shipped in the package, by id; a block of the same name replaces one."""

    @property
    def example_name(self) -> str:
        return f"my-{self.word}"

    @property
    def example_command(self) -> str:
        return f"python -m my_{self.word} --host {{host}} --port {{port}}"


@dataclass(frozen=True)
class LaunchOptions:
    """The launch options of a register command, checked and parsed into block fields."""

    command: list[str] | None
    image: str | None
    url: str | None
    env: dict[str, str]
    secret_env: dict[str, SecretStr]
    resolved: tuple[str, ...] = ()
    """What registration resolved in the command (a shim, a relative script), one note each, shown."""


def parse_launch_options(noun: Noun, name: str, *, command: str | None, image: str | None, url: str | None,
                         env: list[str], secret_env: list[str]) -> LaunchOptions:
    """Check a register command line: the name, exactly one source, ``{port}``, KEY=VALUE pairs.

    Raises:
        UsageProblem: what is wrong and how to write it instead.
    """
    if not is_block_name(name):
        raise UsageProblem(f"{name!r} cannot name {noun.article} {noun.word}: use lowercase letters, digits and "
                           f"dashes (e.g. {noun.example_name!r})")
    given = [flag for flag, value in (("--command", command), ("--image", image), ("--url", url)) if value]
    if len(given) != 1:
        raise UsageProblem("give exactly one of --command, --image or --url" + (f" (got {', '.join(given)})" if given else ""))
    env_vars = parse_pairs(env, "--env")
    secrets = parse_pairs(secret_env, "--secret-env", from_environment=True)
    argv: list[str] | None = None
    notes: list[str] = []
    if command:
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise UsageProblem(f"--command cannot be split into arguments: {exc}") from None
        if not any("{port}" in part for part in [*argv, *env_vars.values()]):
            raise UsageProblem("--command must contain {port}, where the launcher puts the free port it picked, "
                               f'e.g. --command "{noun.example_command}"')
        argv, notes = resolve_at_registration(argv, cwd=Path.cwd(), path=os.environ.get("PATH", os.defpath))
    if url and not url.startswith(("http://", "https://")):
        raise UsageProblem(f"--url must start with http:// or https://, got {url!r}")
    return LaunchOptions(command=argv, image=image, url=url, env=env_vars,
                         secret_env={k: SecretStr(v) for k, v in secrets.items()}, resolved=tuple(notes))


@contextmanager
def invalid_as_usage() -> Generator[None]:
    """A block that refuses its fields is a command-line mistake: say which, without a traceback."""
    try:
        yield
    except ValidationError as exc:
        raise UsageProblem("; ".join(e["msg"] for e in exc.errors())) from None


def parse_pairs(items: list[str], flag: str, *, from_environment: bool = False) -> dict[str, str]:
    """``KEY=VALUE`` options as a dict; with ``from_environment``, a bare ``KEY`` takes ``$KEY`` now.

    Raises:
        UsageProblem: a pair is malformed, a key is not a variable name, or ``$KEY`` is unset.
    """
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


def launch_view(spec: LaunchSpec) -> JsonObject:
    """The launch settings ``show`` prints, in order, with secret values masked."""
    return {
        "command": [*spec.command] if spec.command is not None else None,
        "image": spec.image,
        "container_port": spec.container_port if spec.image else None,
        "url": spec.url,
        "env": {**spec.env},
        "secret_env": {k: MASK for k in spec.secret_env},
        "startup_timeout_seconds": spec.startup_timeout_seconds,
    }


def register_block(block: LaunchBlock, name: str, *, noun: Noun, overwrite: bool, resolved: Sequence[str] = ()) -> None:
    """Save ``block`` as ``name`` and say how it launches, what of its command was resolved (a shim, a relative
    script), and which reference it now replaces.

    Raises:
        UsageProblem: the name is taken and ``overwrite`` was not given.
    """
    use_prefect_server()
    asyncio.run(save_block(block, name, noun=noun, overwrite=overwrite))
    typer.echo(f"registered {noun.word} {name!r} ({noun.block_type.__name__} block {name!r}): "
               f"{block.to_launch_spec().describe()}")
    for note in resolved:
        typer.echo(f"  resolved {note}")
    if name in noun.references:
        typer.echo(f"note: this replaces the reference {noun.word} {name!r} for runs that can reach this Prefect API")


def list_blocks(noun: Noun, extra: Sequence[tuple[str, str, str, str]] = (),
                launch: Callable[[LaunchBlock], str] | None = None, reference_note: str = "") -> None:
    """Print the registered blocks of ``noun``, then the reference servers no block replaces, then
    ``extra`` rows (name, source, version, launch: the coding-agent harnesses). ``launch`` says how a block
    launches (its launch line by default); ``reference_note`` follows each reference's."""
    use_prefect_server()
    blocks = asyncio.run(read_blocks(noun.block_type))
    describe = launch or (lambda block: block.to_launch_spec().describe())
    echo_listing({name: (block.version, describe(block)) for name, block in blocks.items()},
                 {ref_id: (reference.version, f"python -m {reference.module}{reference_note}")
                  for ref_id, reference in noun.references.items()}, extra)


def remove_block(noun: Noun, name: str) -> None:
    """Delete the block ``name`` of ``noun`` (a reference server of that name then launches again).

    Raises:
        UsageProblem: no block of that name is registered (a reference server cannot be removed).
    """
    use_prefect_server()
    try:
        asyncio.run(noun.block_type.adelete(name))
    except (ObjectNotFound, ValueError):  # Prefect says "Unable to find block document named ..."
        if name in noun.references:
            raise UsageProblem(f"{name!r} is a reference {noun.word} shipped with the package, not a registration: "
                               "there is nothing to remove") from None
        raise UsageProblem(f"{noun.word} {name!r} is not registered (`prefect-agentenv {noun.word} list` lists "
                           "them)") from None
    typer.echo(f"removed {noun.word} {name!r} ({noun.block_type.__name__} block {name!r})")
    if name in noun.references:
        typer.echo(f"note: the reference {noun.word} {name!r} launches under this name again")


def echo_view(view: JsonObject, *, as_json: bool = False) -> None:
    """Print a ``show`` view as JSON, or as ``key: value`` lines (dicts as indented ``K=V``, argv quoted)."""
    if as_json:
        typer.echo(json.dumps(view, indent=2))
        return
    for key, value in view.items():
        if isinstance(value, dict):
            typer.echo(f"{key}:" + ("" if value else " {}"))
            for k, v in value.items():
                typer.echo(f"  {k}={v}")
        elif isinstance(value, list):
            typer.echo(f"{key}: {join_argv([str(arg) for arg in value])}")
        elif value is not None:
            typer.echo(f"{key}: {value}")


def echo_listing(blocks: Mapping[str, tuple[str, str]], references: Mapping[str, tuple[str, str]],
                 extra: Sequence[tuple[str, str, str, str]] = ()) -> None:
    """Print registered blocks, then the references no block replaces, as NAME SOURCE VERSION LAUNCH.

    Args:
        blocks: block name → (version, how it launches).
        references: reference id → (version, how it launches).
        extra: more rows, printed last; one a block of the same name replaces says so.
    """
    rows = [("NAME", "SOURCE", "VERSION", "LAUNCH")]
    others = {row[0] for row in extra}
    for name, (version, launch) in sorted(blocks.items()):
        source = "block (overrides reference)" if name in references or name in others else "block"
        rows.append((name, source, version, launch))
    for name, (version, launch) in sorted(references.items()):
        if name not in blocks:
            rows.append((name, "reference", version, launch))
    rows += [row for row in extra if row[0] not in blocks]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        typer.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[3])


def join_argv(argv: list[str]) -> str:
    """A command line to read (and paste): quoted where needed, but ``{port}`` left bare."""
    return " ".join(part if _PLAIN_ARG.match(part) else shlex.quote(part) for part in argv)


async def save_block(block: Block, name: str, *, noun: Noun, overwrite: bool) -> None:
    """Save ``block`` as ``name``; an existing name needs ``overwrite``.

    Raises:
        UsageProblem: the name is taken and ``overwrite`` was not given.
    """
    try:
        await block.asave(name, overwrite=overwrite)
    except ValueError as exc:
        if "already in use" in str(exc):
            raise UsageProblem(f"{noun.word} {name!r} is already registered; add --overwrite to replace it") from None
        raise


async def read_blocks(block_type: type[_B]) -> dict[str, _B]:
    """Every named block of ``block_type``, without their secrets (an invalid one is skipped with a warning)."""
    async with get_client() as client:
        try:
            documents = await client.read_block_documents_by_type(block_type.get_block_type_slug(),
                                                                  include_secrets=False)
        except ObjectNotFound:
            return {}  # the block type is registered by the first save
    secret_fields = {path.split(".")[0] for path in block_type.model_json_schema().get("secret_fields", [])}
    blocks: dict[str, _B] = {}
    for document in documents:
        if document.is_anonymous or not document.name:
            continue
        # Secrets come back obfuscated (not in their field's shape); the listing does not show them.
        data = {k: v for k, v in document.data.items() if k not in secret_fields}
        try:
            blocks[document.name] = block_type.model_validate(data)
        except ValidationError as exc:
            typer.echo(f"warning: block {document.name!r} is invalid: {exc.errors()[0]['msg']}", err=True)
    return blocks
