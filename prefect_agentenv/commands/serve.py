"""``prefect-agentenv serve``: the package's deployments, served from this process."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from prefect_agentenv.commands._options import check_published, published_ref


def serve_command(
    benchmark_file: Annotated[str, typer.Option(
        "--benchmark", help="Benchmark the nightly deployment runs: a file, or a published version SLUG@VERSION.")
    ] = "examples/benchmark.yaml",
    cron: Annotated[str, typer.Option(help="Schedule of the nightly deployment (cron).")] = "0 2 * * *",
    no_schedule: Annotated[bool, typer.Option(help="Serve the nightly deployment without its schedule.")] = False,
    limit: Annotated[int | None, typer.Option(help="At most this many runs at once.")] = None,
) -> None:
    """Serve the agent-task, benchmark/nightly and rescore/rescore deployments from this process (Ctrl-C stops)."""
    # Imported here so other commands do not pay for Prefect's settings and runner.
    from prefect_agentenv.commands._prefect_server import use_prefect_server

    use_prefect_server()
    from prefect_agentenv.deployments import serve_all

    published = published_ref(benchmark_file)
    if published is not None:
        check_published(*published)
    elif not Path(benchmark_file).exists():
        typer.echo(f"error: {benchmark_file} does not exist", err=True)
        raise typer.Exit(2)
    serve_all(benchmark_file, cron=None if no_schedule else cron, limit=limit)
