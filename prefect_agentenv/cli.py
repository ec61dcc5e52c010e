"""The ``prefect-agentenv`` command line."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from prefect_agentenv.documents import TaskDocument, validate_file

app = typer.Typer(
    name="prefect-agentenv",
    help="Run agent-evaluation tasks as Prefect flows.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.command()
def validate(files: Annotated[list[Path], typer.Argument(help="Task documents (JSON or YAML).")]) -> None:
    """Check documents; list every problem. Exit 0 when all are valid, 2 otherwise."""
    failed = False
    for path in files:
        result = validate_file(path)
        for w in result.warnings:
            typer.echo(f"{path}: warning: {w.render()}", err=True)
        if result.ok:
            typer.echo(f"{path}: ok ({len(result.document.steps) if result.document else 0} steps)")
            continue
        failed = True
        typer.echo(f"{path}: {len(result.problems)} problem(s)")
        for p in result.problems:
            typer.echo(f"  - {p.render()}")
    raise typer.Exit(2 if failed else 0)


@app.command()
def schema() -> None:
    """Print the JSON Schema of task documents (point your editor at it)."""
    doc = TaskDocument.model_json_schema()
    doc["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    doc["title"] = "prefect-agentenv task document"
    json.dump(doc, sys.stdout, indent=2)
    sys.stdout.write("\n")


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
