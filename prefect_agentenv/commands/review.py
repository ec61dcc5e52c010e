"""``prefect-agentenv review``: answer a paused review step from a terminal, as the Prefect UI's Resume form does."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

import typer

from prefect_agentenv.exit_codes import ExitCode


def review_command(
    flow_run_id: Annotated[str, typer.Argument(help="The paused flow run (its id is in the review step's log line).")],
    approve: Annotated[bool | None, typer.Option("--approve/--reject", help="Let the task go on, or fail it.")] = None,
    note: Annotated[str, typer.Option(help="Why; kept in the report under metadata.reviews.")] = "",
) -> None:
    """Approve or reject a flow run paused by a review step, with a note. Exit 1 when it is not paused."""
    if approve is None:
        typer.echo("error: give --approve or --reject", err=True)
        raise typer.Exit(ExitCode.INVALID)
    try:
        run_id = UUID(flow_run_id)
    except ValueError:
        typer.echo(f"error: {flow_run_id!r} is not a flow run id", err=True)
        raise typer.Exit(ExitCode.INVALID) from None
    # Imported here so the other commands do not pay for Prefect's client.
    from prefect_agentenv.commands._prefect_server import use_prefect_server

    use_prefect_server()  # the server the paused run is recorded on
    from prefect.exceptions import FlowPauseTimeout, NotPausedError, ObjectNotFound
    from prefect.flow_runs import resume_flow_run

    try:
        resume_flow_run(run_id, run_input={"approve": approve, "note": note})
    except (NotPausedError, FlowPauseTimeout, ObjectNotFound, RuntimeError) as exc:
        typer.echo(f"error: flow run {run_id} cannot be resumed: {exc or type(exc).__name__}", err=True)
        raise typer.Exit(ExitCode.FAILED) from None
    typer.echo(f"flow run {run_id}: {'approved' if approve else 'rejected'}" + (f" ({note})" if note else ""))
