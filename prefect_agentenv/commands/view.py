"""``prefect-agentenv view``: the static HTML report of a benchmark run or of a task run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from prefect_agentenv.exit_codes import ExitCode


def view_command(
    report: Annotated[Path | None, typer.Argument(help="A task run's report.json (as `run --report` writes).")] = None,
    benchmark: Annotated[str | None, typer.Option(help="A benchmark slug: show its run from the artifact store.")]
    = None,
    run: Annotated[str | None, typer.Option("--run", help="The benchmark's run id (default: its latest run).")] = None,
    task_run: Annotated[str | None, typer.Option(help="A task run's id: read its report from the artifact store.")]
    = None,
    out: Annotated[Path | None, typer.Option(help="Write the report folder here (default: reports/view/<name>).")]
    = None,
    serve: Annotated[bool, typer.Option(help="Serve the report on 127.0.0.1 until Ctrl-C.")] = False,
    port: Annotated[int, typer.Option(help="Port for --serve (0: a free one).")] = 0,
) -> None:
    """Write a self-contained HTML report (summary, sortable table, transcripts, SVG charts) and print its path."""
    if sum(x is not None for x in (report, benchmark, task_run)) != 1:
        typer.echo("error: give one of REPORT, --benchmark SLUG or --task-run ID", err=True)
        raise typer.Exit(ExitCode.INVALID)
    # Imported here so the other commands do not pay for Prefect and the store.
    from prefect_agentenv.artifacts import ArtifactError, get_artifact_store
    from prefect_agentenv.commands._prefect_server import use_prefect_server

    use_prefect_server(running_only=True)  # an S3 store's block is read through the Prefect API
    from prefect_agentenv.commands._run_home import found_anywhere
    from prefect_agentenv.exceptions import AgentEnvError
    from prefect_agentenv.flows.task_runner import report_key
    from prefect_agentenv.flows.ui.view_data import benchmark_report_files, benchmark_view, task_view
    from prefect_agentenv.results.task_report import TaskReport
    from prefect_agentenv.viewer import write, write_files

    try:
        with get_artifact_store() as store:
            if benchmark is not None:
                if run is not None:
                    store = found_anywhere(store, f"{benchmark}/{run}").store  # a worker's store, when elsewhere
                view = benchmark_view(store, benchmark, run)
                folder = out or Path("reports") / "view" / f"{benchmark}-{view.run_id}"
                index = write_files(benchmark_report_files(store, view), folder)  # a run's page at a time
            else:
                key = report_key(task_run or "")
                raw = report.read_bytes() if report is not None else store.get_object(key)
                parsed = TaskReport.model_validate_json(raw)
                view, files = task_view(parsed, store, report_url=None if report else store.object_url(key))
                folder = out or Path("reports") / "view" / f"task-{parsed.task_id}-{(parsed.flow_run_id or 'run')[:8]}"
                index = write(view, folder, files)
    except (AgentEnvError, ArtifactError, OSError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(ExitCode.FAILED) from None
    typer.echo(f"report: {index.resolve().as_uri()}")
    if serve:
        _serve(folder, port)


def _serve(folder: Path, port: int) -> None:
    from prefect_agentenv.viewer.serve import report_server

    server = report_server(folder, port)
    typer.echo(f"serving on http://127.0.0.1:{server.server_address[1]}/index.html (Ctrl-C stops)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
