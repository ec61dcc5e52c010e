"""Which Prefect server a command records on, chosen before it talks to Prefect.

In order: the server ``PREFECT_API_URL`` names (in the environment or the user's Prefect profile:
the user's own); else the local server of the agentenv home (``commands/_local_server.py``), started
once in the background and reused; else, only when asked (``--ephemeral``,
``PREFECT_AGENTENV_SERVER=ephemeral``), Prefect's temporary server, started and stopped by the
command. In CI (``CI`` set) or without a terminal on stdin, ``auto`` uses the local server only if
it is already running and otherwise the temporary one: a pipeline or a script is never left with a
server it did not ask for, nor waits on one. The choice is this process's alone: it sets
``PREFECT_API_URL`` in its own environment, never in a Prefect profile.
"""

from __future__ import annotations

import os
import sys
import time

import typer
from pydantic import ValidationError

from prefect_agentenv.commands._local_server import LocalServer, ServerState, prefect_version
from prefect_agentenv.exceptions import LocalServerError
from prefect_agentenv.exit_codes import ExitCode
from prefect_agentenv.prefect_defaults import set_prefect_defaults
from prefect_agentenv.settings import AgentEnvSettings, get_settings


def local_server(settings: AgentEnvSettings | None = None) -> LocalServer:
    """The local server of this process's agentenv home."""
    settings = settings or current_settings()
    return LocalServer(settings.server_dir, preferred_port=settings.server_port)


def current_settings() -> AgentEnvSettings:
    """The settings, or one line and exit 2 when a variable holds a value they refuse."""
    try:
        return get_settings()
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(p) for p in problem["loc"])
        typer.echo(f"error: PREFECT_AGENTENV_{where.upper()}: {problem['msg']}", err=True)
        raise typer.Exit(ExitCode.INVALID) from None


def configured_api_url() -> str | None:
    """The API URL Prefect's own settings name (environment, profile), if any."""
    from prefect.settings import get_current_settings

    return get_current_settings().api.url


def use_prefect_server(*, ephemeral: bool = False, ui_wanted: bool = False, running_only: bool = False) -> str | None:
    """Point this process's Prefect at the server its commands use; its API URL, or None for
    Prefect's temporary server.

    Args:
        ephemeral: ``--ephemeral`` was given: the temporary server unless ``PREFECT_API_URL`` is set.
        ui_wanted: The command is run to be looked at in the UI (``make demo``): in ``auto`` mode only
            CI, not a missing terminal, keeps the local server from being started.
        running_only: The command only reads blocks (the artifact store's, a model endpoint's): the
            local server when it runs, else none at all (a temporary server has no blocks to read).
    """
    set_prefect_defaults()
    settings = current_settings()
    if (url := configured_api_url()) is not None:
        return url
    mode = "ephemeral" if ephemeral else settings.server
    if mode == "ephemeral":
        return None
    server = local_server(settings)
    if running_only:
        running = server.running()
        return _point_at(running) if running is not None else None
    interactive = not settings.in_ci and (ui_wanted or _stdin_is_a_terminal())
    if mode == "auto" and not interactive:
        running = server.running()
        if running is None:
            _note_once(settings)
            return None
        return _point_at(running)
    return _point_at(start_local_server(server))


_noted: list[bool] = []


def _note_once(settings: AgentEnvSettings) -> None:
    """Say once per process why the temporary server is used, and how to keep one instead."""
    if not _noted:
        _noted.append(True)
        why = "CI is set" if settings.in_ci else "stdin is not a terminal"
        typer.echo(f"note: using Prefect's temporary server ({why}, and no local server is running; "
                   "`prefect-agentenv server start` keeps one for later commands)", err=True)


def start_local_server(server: LocalServer) -> ServerState:
    """The running local server, started with a line of progress on stderr if it was not running."""
    if (running := server.running()) is not None:
        return running
    progress = _Progress(str(server.log_path))
    try:
        state, started = server.ensure(progress)
    except LocalServerError as exc:
        progress.done()
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(ExitCode.FAILED) from None
    progress.done()
    if started:
        typer.echo(f"local Prefect server up in {progress.elapsed():.1f}s: UI {state.url} "
                   "(it keeps running; `prefect-agentenv server stop` stops it)", err=True)
    return state


def _point_at(state: ServerState) -> str:
    """This process's Prefect settings now name the local server (environment, then Prefect's cache)."""
    if state.prefect_version != prefect_version():
        typer.echo(f"warning: the local Prefect server runs Prefect {state.prefect_version}, this is "
                   f"{prefect_version()}: `prefect-agentenv server stop` then any command starts it anew "
                   "(and migrates its database)", err=True)
    os.environ["PREFECT_API_URL"] = state.api_url
    if "prefect.context" in sys.modules:  # Prefect read its settings already: read them again
        from prefect.context import refresh_global_settings_context

        refresh_global_settings_context()
    return state.api_url


def _stdin_is_a_terminal() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stdin
        return False


class _Progress:
    """What a command waiting on the local server prints: a line updated each second on a terminal,
    a line every 10 s otherwise."""

    def __init__(self, log: str) -> None:
        self.log = log
        self.started = time.monotonic()
        self.shown: tuple[str, int] | None = None
        self.tty = sys.stderr.isatty()

    def __call__(self, what: str, waited: float) -> None:
        step = int(waited) if self.tty else int(waited) // 10 * 10
        if self.shown == (what, step):
            return
        self.shown = (what, step)
        line = (f"{what} the local Prefect server" if what != "waiting for another command"
                else "waiting for another command starting the local Prefect server")
        line += f" (log: {self.log}) … {step}s"
        typer.echo(f"\r{line}" if self.tty else line, err=True, nl=not self.tty)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def done(self) -> None:
        if self.tty and self.shown is not None:
            typer.echo("", err=True)
