"""``prefect-agentenv server``: the local Prefect server of the agentenv home — status, start, stop, logs.

The commands start it themselves when they need it (``commands/_prefect_server.py`` says when);
these manage it by hand. Each finds it through ``<home>/server/server.json`` and stops it by the
PID recorded there, never by name.
"""

from __future__ import annotations

import time
from typing import Annotated

import typer

from prefect_agentenv.commands._prefect_server import configured_api_url, local_server, start_local_server
from prefect_agentenv.exit_codes import ExitCode

server_app = typer.Typer(
    help="The local Prefect server of the agentenv home (the UI): status, start, stop, logs.",
    no_args_is_help=True,
    add_completion=False,
)


@server_app.command()
def status() -> None:
    """Whether the local server runs, its UI URL and its log; exit 0 when it runs, 1 when it does not."""
    server = local_server()
    state = server.running()
    if state is None:
        typer.echo(f"local Prefect server: not running (any command that needs it starts it; log: {server.log_path})")
    else:
        typer.echo(f"local Prefect server: running, pid {state.pid}, Prefect {state.prefect_version}, "
                   f"since {state.started_at}")
        typer.echo(f"  UI:  {state.url}")
        typer.echo(f"  API: {state.api_url}  (for Prefect's own CLI: export PREFECT_API_URL={state.api_url})")
        typer.echo(f"  log: {server.log_path}")
    _say_when_not_used(state.api_url if state else None)
    raise typer.Exit(ExitCode.OK if state is not None else ExitCode.FAILED)


@server_app.command()
def start() -> None:
    """Start the local server in the background (nothing when it runs) and print its UI URL."""
    state = start_local_server(local_server())
    typer.echo(f"local Prefect server running: UI {state.url} (pid {state.pid}); "
               "`prefect-agentenv server stop` stops it")
    _say_when_not_used(state.api_url)


@server_app.command()
def stop() -> None:
    """Stop the local server (by the PID it recorded); nothing when it is not running."""
    state = local_server().stop()
    typer.echo("no local Prefect server was running" if state is None
               else f"stopped the local Prefect server (pid {state.pid}, {state.url})")


@server_app.command()
def logs(
    lines: Annotated[int, typer.Option("--lines", "-n", help="How many of the last lines to print.", min=0)] = 50,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep printing new lines (Ctrl-C stops).")] = False,
) -> None:
    """Print the end of the local server's log."""
    path = local_server().log_path
    if not path.exists():
        typer.echo(f"error: no log yet ({path}): the local server has never started in this home", err=True)
        raise typer.Exit(ExitCode.FAILED)
    with path.open(errors="replace") as log:
        for line in log.readlines()[-lines:] if lines else []:
            typer.echo(line, nl=False)
        while follow:
            line = log.readline()
            if line:
                typer.echo(line, nl=False)
            else:
                time.sleep(0.5)


def _say_when_not_used(local_api: str | None) -> None:
    """A line when ``PREFECT_API_URL`` names another server: the commands use that one, not this."""
    url = configured_api_url()
    if url is not None and url.rstrip("/") != local_api:
        typer.echo(f"note: PREFECT_API_URL is set ({url}): the commands record there, not on the local server")
