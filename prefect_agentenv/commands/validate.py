"""``prefect-agentenv validate``: check task and benchmark documents without running them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from prefect_agentenv.exit_codes import ExitCode


def validate_command(
    files: Annotated[list[Path], typer.Argument(help="Task or benchmark documents (JSON or YAML).")],
    explain: Annotated[bool, typer.Option("--explain", help="Print each valid task document in its canonical form "
                                          "(AgentEnv field names and forms read as this runner's).")] = False,
) -> None:
    """Check task and benchmark documents; list every problem. Exit 0 when all are valid, 2 otherwise."""
    # Imported here so `--help` does not pay for the documents.
    from prefect_agentenv.documents import BenchmarkValidationResult, validate_any_file
    from prefect_agentenv.documents.models import explain_step

    failed = False
    for path in files:
        result = validate_any_file(path)
        for w in result.warnings:
            typer.echo(f"{path}: {w.severity}: {w.render()}", err=True)
        if isinstance(result, BenchmarkValidationResult):
            if result.ok:
                tasks = len({t.base_id for t in result.tasks})
                typer.echo(f"{path}: ok (benchmark: {tasks} tasks, {len(result.tasks)} runs per epoch)")
                continue
        elif result.ok:
            typer.echo(f"{path}: ok ({len(result.document.steps) if result.document else 0} steps)")
            if explain and result.document is not None:
                doc = result.document
                canonical = {"id": doc.id, "steps": [explain_step(s) for s in doc.steps]}
                typer.echo(json.dumps(canonical, indent=2))
            continue
        failed = True
        typer.echo(f"{path}: {len(result.problems)} problem(s)")
        for p in result.problems:
            typer.echo(f"  - {p.render()}")
    raise typer.Exit(ExitCode.INVALID if failed else ExitCode.OK)
