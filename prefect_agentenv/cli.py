"""The ``prefect-agentenv`` command line."""

from __future__ import annotations

import atexit
import importlib
import os
import sys
import threading
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from typer.core import TyperGroup

from prefect_agentenv.commands.bench import bench_command
from prefect_agentenv.commands.calibrate import calibrate_command
from prefect_agentenv.commands.compare import compare_command
from prefect_agentenv.commands.publish import publish_command
from prefect_agentenv.commands.rescore import rescore_command
from prefect_agentenv.commands.review import review_command
from prefect_agentenv.commands.rollout import rollout_command
from prefect_agentenv.commands.run import run_command
from prefect_agentenv.commands.schema import schema_command
from prefect_agentenv.commands.serve import serve_command
from prefect_agentenv.commands.upgrade_blocks import upgrade_blocks_command
from prefect_agentenv.commands.validate import validate_command
from prefect_agentenv.commands.view import view_command

if TYPE_CHECKING:
    # Typer (>= 0.26) carries its own copy of Click; its group methods take and return that copy's types.
    from typer import _click as click

# One module per command under prefect_agentenv.commands; each imports the documents, the flows or
# Prefect (and asyncio, a third of this module's own import time) inside the command that needs
# them: `--help`, `validate` and `schema` must start in a fraction of a second.

_SUBGROUPS: dict[str, tuple[str, str, str]] = {
    "agent": ("prefect_agentenv.commands.agent", "agent_app",
              "Register, list, show and check agents (A2AAgent blocks, the reference agents, the installed "
              "coding-agent harnesses); install a harness by name."),
    "artifact": ("prefect_agentenv.commands.artifact", "artifact_app",
                 "Publish, list and fetch versioned artifacts in the artifact store."),
    "control": ("prefect_agentenv.commands.control", "control_app",
                "Steer a benchmark run in progress: status, pause, resume, set, requeue, cancel."),
    "env": ("prefect_agentenv.commands.env", "env_app",
            "Register, list, show and check environments (AgentEnvironment blocks and the reference envs)."),
    "server": ("prefect_agentenv.commands.server", "server_app",
               "The local Prefect server of the agentenv home (the UI): status, start, stop, logs."),
}
"""Command groups loaded only when invoked (they import Prefect's block machinery): name →
(module, Typer app, the app's help, repeated here so `--help` can list it without the import)."""


class _LazyGroup(TyperGroup):
    """The root command: sub-groups from :data:`_SUBGROUPS` are imported when one is run."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(_SUBGROUPS))

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None,
                                                                            list[str]]:
        if args and args[0] in _SUBGROUPS:
            self.load(args[0])
        return super().resolve_command(ctx, args)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        found = super().get_command(ctx, cmd_name)
        if found is None and cmd_name in _SUBGROUPS:
            # Listing for --help: the name and its help line, without importing the group.
            return TyperGroup(name=cmd_name, help=_SUBGROUPS[cmd_name][2])
        return found

    def load(self, name: str) -> click.Command:
        """Import a sub-group and register it under ``name``."""
        if name not in self.commands:
            module, attr, _ = _SUBGROUPS[name]
            group = getattr(importlib.import_module(module), attr)
            group.rich_markup_mode = app.rich_markup_mode  # its help renders as the root's does
            command = typer.main.get_group(group)
            command.name = name
            self.add_command(command, name)
        return self.commands[name]


app = typer.Typer(
    # Click's plain help: an option's whole name at any width (Rich's table cut long ones at 80
    # columns), and help text shown as written (Rich read "[agent]" as markup and dropped it).
    rich_markup_mode=None,
    name="prefect-agentenv",
    help="Run agent-evaluation tasks as Prefect flows.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=_LazyGroup,
)


def _print_version(asked: bool) -> None:
    if asked:
        from importlib.metadata import version

        typer.echo(f"prefect-agentenv {version('prefect-agentenv')}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                          help="Print the version of prefect-agentenv and exit.")] = False,
) -> None:
    """Run agent-evaluation tasks as Prefect flows."""


app.command(name="run")(run_command)
app.command(name="bench")(bench_command)
app.command(name="validate")(validate_command)
app.command(name="schema")(schema_command)
app.command(name="serve")(serve_command)
app.command(name="upgrade-blocks")(upgrade_blocks_command)
app.command(name="publish")(publish_command)
app.command(name="view")(view_command)
app.command(name="compare")(compare_command)
app.command(name="rescore")(rescore_command)
app.command(name="rollout")(rollout_command)
app.command(name="review")(review_command)
app.command(name="calibrate")(calibrate_command)


def main() -> None:
    """Console-script entry point: the command, then a quick exit (see :func:`_exit_now`)."""
    try:
        app()
    except SystemExit as exc:
        _exit_now(exc.code)
    _exit_now(0)


def _exit_now(code: object) -> NoReturn:
    """End the process once the command is done, without tearing the interpreter down.

    What a normal exit does that anyone can see still happens, in its order: other non-daemon
    threads are waited for, then the exit handlers run (Prefect's event and log workers send what
    they hold, logging flushes), then the output streams are flushed. What is skipped is freeing
    every module and object one by one, which after a run (Prefect, pydantic, the steps) took
    1.5-3 s of a busy 2-core machine between the last exit handler and the process's end.
    """
    _let_prefect_send()
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message"): printed, status 1, as the interpreter does
        print(code, file=sys.stderr)
        status = 1
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is None or threading.current_thread() is not threading.main_thread():
        sys.exit(status)  # not CPython's usual main thread: leave the exit to the interpreter
    # What the interpreter does first at exit: thread-pool workers are told to stop, then the
    # remaining non-daemon threads are waited for.
    shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can be shown
            pass
    os._exit(status)


_SEND_SECONDS = 10.0
"""How long the exit waits for each of Prefect's workers to send what it holds."""


def _let_prefect_send() -> None:
    """Wait until Prefect's event and log workers have sent what the command queued (a block load's
    event, the last log lines), each for at most :data:`_SEND_SECONDS`.

    Their exit handler stops a worker first and sends what it still holds after, warning ``Still
    processing items: 1 items remaining...`` on stderr for each item left; waited for here, their
    queues are empty when they stop, and the exit says nothing. A command that never loaded
    Prefect has nothing to wait for.
    """
    services = sys.modules.get("prefect._internal.concurrency.services")
    base = getattr(services, "_QueueServiceBase", None)
    if base is None:
        return
    with base._instance_cache_lock:  # the workers started in this process (events, logs), by key
        workers = list(base._instances.values())
    for worker in workers:
        waiter = threading.Thread(target=worker.wait_until_empty, name="agentenv-exit-send", daemon=True)
        waiter.start()
        waiter.join(_SEND_SECONDS)


if __name__ == "__main__":
    main()
