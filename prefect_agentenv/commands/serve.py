"""``prefect-agentenv serve``: the package's deployments, served from this process."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from prefect_agentenv.commands._options import check_published, published_ref
from prefect_agentenv.exit_codes import ExitCode


def serve_command(
    benchmark_file: Annotated[str, typer.Option(
        "--benchmark", help="Benchmark the nightly deployment runs: a file, or a published version SLUG@VERSION.")
    ] = "examples/benchmark.yaml",
    cron: Annotated[str, typer.Option(help="Schedule of the nightly deployment (cron).")] = "0 2 * * *",
    schedule: Annotated[bool, typer.Option(
        "--schedule/--no-schedule",
        help="Give the nightly deployment its --cron schedule; without one it runs only when asked.")] = True,
    limit: Annotated[int | None, typer.Option(help="At most this many runs at once.")] = None,
) -> None:
    """Serve the package's six deployments from this process until Ctrl-C (docs/deployments.md).

    \b
      agent-task/agent-task              one task document
      agent-task-shard/agent-task-shard  several task runs of a benchmark
      benchmark/nightly                  the --benchmark document, on --cron
      rescore/rescore                    a finished run, scored again
      label-judged-run/label             people label a run's judged criteria
      calibrate-judges/calibrate         a run's judges against their labels
    """
    # Imported here so other commands do not pay for Prefect's settings and runner.
    from prefect_agentenv.commands._prefect_server import use_prefect_server

    use_prefect_server()
    from prefect_agentenv.deployments import serve_all

    published = published_ref(benchmark_file)
    if published is not None:
        check_published(*published)
    elif not Path(benchmark_file).exists():
        typer.echo(f"error: {benchmark_file} does not exist", err=True)
        raise typer.Exit(ExitCode.INVALID)
    serve_all(benchmark_file, cron=cron if schedule else None, limit=limit)
