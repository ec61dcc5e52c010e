"""``prefect-agentenv run``: one task document, checked, then run as a Prefect flow in this process.

The options are checked and the document validated here; ``--dry-run`` prints the plan. The run
itself, and what each way it can end prints and exits with, is :mod:`.run_flow`'s, imported only
when a task runs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from prefect_agentenv.commands._options import Verbose, check_writable, overrides, pairs
from prefect_agentenv.exit_codes import ExitCode
from prefect_agentenv.prefect_defaults import quiet_engine_logs

if TYPE_CHECKING:
    from prefect_agentenv.documents import TaskDocument


def run_command(
    task_file: Annotated[Path, typer.Argument(help="Task document (JSON or YAML).")],
    report: Annotated[Path | None, typer.Option(help="Write the JSON report here.")] = None,
    seed: Annotated[list[str], typer.Option(help="KEY=VALUE for <KEY> placeholders (repeatable).")] = [],  # noqa: B006
    override: Annotated[
        list[str], typer.Option(help="KEY=VALUE run override, e.g. a2a_agent_id=scripted (repeatable).")
    ] = [],  # noqa: B006
    keep: Annotated[bool, typer.Option(help="Keep agent sandboxes after the run.")] = False,
    dry_run: Annotated[bool, typer.Option(help="Validate and print the plan without running.")] = False,
    verbose: Verbose = False,
    ephemeral: Annotated[bool, typer.Option(help="Record on Prefect's temporary server, started and stopped by "
                                            "this command, instead of the home's local server.")] = False,
) -> None:
    """Run one task. Exit 0 when the run completed (whatever the score), 1 when it failed, 2 when invalid."""
    from prefect_agentenv.documents import validate_file

    seeds = pairs(seed, "--seed")
    run_overrides = overrides(override)
    result = validate_file(task_file, seeds)
    for w in result.warnings:
        typer.echo(f"warning: {w.render()}", err=True)
    if not result.ok or result.document is None:
        typer.echo(f"{task_file}: {len(result.problems)} problem(s)", err=True)
        for p in result.problems:
            typer.echo(f"  - {p.render()}", err=True)
        raise typer.Exit(ExitCode.INVALID)
    doc = result.document
    if report is not None:
        check_writable(report, "--report")
    if dry_run:
        typer.echo(f"task {doc.id}: {len(doc.steps)} steps")
        for i, wave in enumerate(_waves(doc), 1):
            typer.echo(f"  wave {i}: " + ", ".join(f"{s} ({doc.step(s).type})" for s in wave))
        raise typer.Exit(ExitCode.OK)
    quiet_engine_logs(verbose=verbose)
    # Imported here: the server's choice reads Prefect's settings, which `--help` and `validate` never load.
    from prefect_agentenv.commands._prefect_server import use_prefect_server

    use_prefect_server(ephemeral=ephemeral)
    # Prefect retries API calls on 5xx/connection errors with exponential backoff (2, 4, 8 s): a
    # run whose API went away gives up after ~15 s per call, not minutes.
    os.environ.setdefault("PREFECT_CLIENT_MAX_RETRIES", "3")
    from prefect_agentenv.commands.run_flow import run_task_cli

    raise typer.Exit(run_task_cli(doc, overrides=run_overrides, keep=keep, report=report))


def _waves(doc: TaskDocument) -> list[list[str]]:
    """Steps grouped by how soon they can start (a wave's steps run in parallel)."""
    from prefect_agentenv.documents.graph import levels, resolve_dependencies

    deps = resolve_dependencies([s.id for s in doc.steps], [s.dependency_ids() for s in doc.steps])
    level = levels(deps)
    waves: list[list[str]] = [[] for _ in range(max(level.values(), default=-1) + 1)]
    for step_id in deps:
        waves[level[step_id]].append(step_id)
    return waves
