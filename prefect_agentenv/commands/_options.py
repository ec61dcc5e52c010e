"""What ``run``, ``bench`` and ``serve`` share: KEY=VALUE options, a report path that must be writable,
and a published benchmark version named on the command line.

Each helper refuses bad input the CLI's way, one line on stderr and exit 2, before anything runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from prefect_agentenv.exit_codes import ExitCode

Verbose = Annotated[bool, typer.Option("--verbose", "-v", help="Also print Prefect's log lines for every flow "
                                        "and task run (the Prefect UI always has them).")]
"""``-v/--verbose`` of the commands that run flows: without it the terminal shows the progress, warnings,
errors and the summary (:func:`~prefect_agentenv.prefect_defaults.quiet_engine_logs`)."""


def pairs(values: list[str], option: str) -> dict[str, str]:
    """KEY=VALUE pairs; a VALUE of ``@path`` is the content of that file (read here, so a run on
    another machine gets the content, not the path)."""
    out: dict[str, str] = {}
    for v in values:
        key, sep, value = v.partition("=")
        if not sep or not key:
            typer.echo(f"error: {option} expects KEY=VALUE, got {v!r}", err=True)
            raise typer.Exit(ExitCode.INVALID)
        if value.startswith("@"):
            try:
                value = Path(value[1:]).read_text(encoding="utf-8")
            except OSError as exc:
                typer.echo(f"error: {option} {key}: cannot read {value[1:]}: {exc.strerror}", err=True)
                raise typer.Exit(ExitCode.INVALID) from None
        out[key] = value
    return out


def overrides(values: list[str]) -> dict[str, str]:
    """``--override`` pairs, refused (exit 2, with a did-you-mean) when a key is not a run override."""
    from prefect_agentenv.exceptions import ConfigurationError
    from prefect_agentenv.runtime.resources.overrides import RunOverrides

    given = pairs(values, "--override")
    try:
        RunOverrides.parse(given)
    except ConfigurationError as exc:
        typer.echo(f"error: --override: {exc}", err=True)
        raise typer.Exit(ExitCode.INVALID) from None
    return given


def check_writable(path: Path, option: str) -> None:
    """Refuse a report path that cannot be written, before anything runs (exit 2)."""
    from prefect_agentenv.runtime.resources.paths import writable_problem

    problem = writable_problem(path)
    if problem:
        typer.echo(f"error: {option} {path}: {problem}", err=True)
        raise typer.Exit(ExitCode.INVALID)


def published_ref(text: str) -> tuple[str, str] | None:
    """``(slug, version)`` when ``text`` names a published version (``SLUG@VERSION``) and no file."""
    from prefect_agentenv.documents.published.snapshot import parse_published_ref

    ref = parse_published_ref(text)
    return ref if ref is not None and not Path(text).exists() else None


def check_published(slug: str, version: str) -> None:
    """Refuse a published version that cannot be read (exit 2, with the versions there are)."""
    from prefect_agentenv.commands._prefect_server import use_prefect_server

    use_prefect_server()  # an S3 store's block is loaded through the Prefect API
    from prefect_agentenv.artifacts import get_artifact_store
    from prefect_agentenv.documents.published.store import read_published
    from prefect_agentenv.exceptions import AgentEnvError

    try:
        with get_artifact_store() as store:
            read_published(store, slug, version)
    except AgentEnvError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(ExitCode.INVALID) from None
