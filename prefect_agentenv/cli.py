"""The ``prefect-agentenv`` command line."""

from __future__ import annotations

import atexit
import importlib
import json
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from typer.core import TyperGroup

from prefect_agentenv.commands.compare import compare_command
from prefect_agentenv.commands.publish import publish_command
from prefect_agentenv.commands.rescore import rescore_command
from prefect_agentenv.commands.review import review_command
from prefect_agentenv.commands.rollout import rollout_command
from prefect_agentenv.commands.view import view_command
from prefect_agentenv.prefect_defaults import set_prefect_defaults

if TYPE_CHECKING:
    # Typer (>= 0.26) carries its own copy of Click; its group methods take and return that copy's types.
    from typer import _click as click

    from prefect_agentenv.documents import TaskDocument

# Every import of the documents, the flows or Prefect (and asyncio, a third of this module's own
# import time) happens inside the command that needs it: `--help`, `validate` and `schema` must
# start in a fraction of a second.

_SUBGROUPS: dict[str, tuple[str, str, str]] = {
    "agent": ("prefect_agentenv.commands.agent", "agent_app",
              "Register, list, show and check agents (A2AAgent blocks, the reference agents, the installed "
              "coding-agent harnesses); install a harness by name."),
    "artifact": ("prefect_agentenv.commands.artifact", "artifact_app",
                 "Publish, list and fetch versioned artifacts in the artifact store."),
    "env": ("prefect_agentenv.commands.env", "env_app",
            "Register, list, show and check environments (AgentEnvironment blocks and the reference envs)."),
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
            command = typer.main.get_group(getattr(importlib.import_module(module), attr))
            command.name = name
            self.add_command(command, name)
        return self.commands[name]


app = typer.Typer(
    name="prefect-agentenv",
    help="Run agent-evaluation tasks as Prefect flows.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=_LazyGroup,
)


@app.command()
def validate(
    files: Annotated[list[Path], typer.Argument(help="Task or benchmark documents (JSON or YAML).")],
    explain: Annotated[bool, typer.Option("--explain", help="Print each valid task document in its canonical form "
                                          "(AgentEnv field names and forms read as this runner's).")] = False,
) -> None:
    """Check task and benchmark documents; list every problem. Exit 0 when all are valid, 2 otherwise."""
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
    raise typer.Exit(2 if failed else 0)


@app.command()
def schema() -> None:
    """Print the JSON Schema of task and benchmark documents (point your editor at it)."""
    from prefect_agentenv.documents.schema import document_schema

    json.dump(document_schema(), sys.stdout, indent=2)
    sys.stdout.write("\n")


def _pairs(values: list[str], option: str) -> dict[str, str]:
    """KEY=VALUE pairs; a VALUE of ``@path`` is the content of that file (read here, so a run on
    another machine gets the content, not the path)."""
    out: dict[str, str] = {}
    for v in values:
        key, sep, value = v.partition("=")
        if not sep or not key:
            typer.echo(f"error: {option} expects KEY=VALUE, got {v!r}", err=True)
            raise typer.Exit(2)
        if value.startswith("@"):
            try:
                value = Path(value[1:]).read_text(encoding="utf-8")
            except OSError as exc:
                typer.echo(f"error: {option} {key}: cannot read {value[1:]}: {exc.strerror}", err=True)
                raise typer.Exit(2) from None
        out[key] = value
    return out


def _overrides(values: list[str]) -> dict[str, str]:
    """``--override`` pairs, refused (exit 2, with a did-you-mean) when a key is not a run override."""
    from prefect_agentenv.exceptions import ConfigurationError
    from prefect_agentenv.runtime.overrides import RunOverrides

    pairs = _pairs(values, "--override")
    try:
        RunOverrides.parse(pairs)
    except ConfigurationError as exc:
        typer.echo(f"error: --override: {exc}", err=True)
        raise typer.Exit(2) from None
    return pairs


def _matrix(values: list[str]) -> dict[str, list[str]]:
    """``--matrix KEY=V1,V2`` options as a sweep's matrix, refused (exit 2) as a ``matrix:`` block is."""
    from prefect_agentenv.documents.matrix import check_matrix

    given: dict[str, list[str]] = {}
    for v in values:
        key, sep, listed = v.partition("=")
        if not sep or not key or key in given:
            problem = f"{key!r} given twice" if key in given else f"expects KEY=VALUE,VALUE…, got {v!r}"
            typer.echo(f"error: --matrix: {problem}", err=True)
            raise typer.Exit(2)
        given[key] = [value.strip() for value in listed.split(",")] if listed.strip() else []
    try:
        return check_matrix(given)
    except ValueError as exc:
        typer.echo(f"error: --matrix: {str(exc).removeprefix('matrix: ')}", err=True)
        raise typer.Exit(2) from None


def _waves(doc: TaskDocument) -> list[list[str]]:
    """Steps grouped by how soon they can start (a wave's steps run in parallel)."""
    from prefect_agentenv.documents.graph import levels, resolve_dependencies

    deps = resolve_dependencies([s.id for s in doc.steps], [s.dependency_ids() for s in doc.steps])
    level = levels(deps)
    waves: list[list[str]] = [[] for _ in range(max(level.values(), default=-1) + 1)]
    for step_id in deps:
        waves[level[step_id]].append(step_id)
    return waves


@app.command()
def run(
    task_file: Annotated[Path, typer.Argument(help="Task document (JSON or YAML).")],
    report: Annotated[Path | None, typer.Option(help="Write the JSON report here.")] = None,
    seed: Annotated[list[str], typer.Option(help="KEY=VALUE for <KEY> placeholders (repeatable).")] = [],  # noqa: B006
    override: Annotated[
        list[str], typer.Option(help="KEY=VALUE run override, e.g. a2a_agent_id=scripted (repeatable).")
    ] = [],  # noqa: B006
    keep: Annotated[bool, typer.Option(help="Keep agent sandboxes after the run.")] = False,
    dry_run: Annotated[bool, typer.Option(help="Validate and print the plan without running.")] = False,
) -> None:
    """Run one task. Exit 0 when the run completed (whatever the score), 1 when it failed, 2 when invalid."""
    from prefect_agentenv.documents import validate_file

    seeds = _pairs(seed, "--seed")
    overrides = _overrides(override)
    result = validate_file(task_file, seeds)
    for w in result.warnings:
        typer.echo(f"warning: {w.render()}", err=True)
    if not result.ok or result.document is None:
        typer.echo(f"{task_file}: {len(result.problems)} problem(s)", err=True)
        for p in result.problems:
            typer.echo(f"  - {p.render()}", err=True)
        raise typer.Exit(2)
    doc = result.document
    if report is not None:
        _check_writable(report, "--report")
    if dry_run:
        typer.echo(f"task {doc.id}: {len(doc.steps)} steps")
        for i, wave in enumerate(_waves(doc), 1):
            typer.echo(f"  wave {i}: " + ", ".join(f"{s} ({doc.step(s).type})" for s in wave))
        raise typer.Exit(0)
    set_prefect_defaults()
    # Prefect retries API calls on 5xx/connection errors with exponential backoff (2, 4, 8 s): a
    # run whose API went away gives up after ~15 s per call, not minutes.
    os.environ.setdefault("PREFECT_CLIENT_MAX_RETRIES", "3")
    from prefect_agentenv.cli_run import run_task_cli

    raise typer.Exit(run_task_cli(doc, overrides=overrides, keep=keep, report=report))


def _check_writable(path: Path, option: str) -> None:
    """Refuse a report path that cannot be written, before anything runs (exit 2)."""
    from prefect_agentenv.runtime.paths import writable_problem

    problem = writable_problem(path)
    if problem:
        typer.echo(f"error: {option} {path}: {problem}", err=True)
        raise typer.Exit(2)


@app.command()
def bench(
    bench_file: Annotated[str, typer.Argument(
        metavar="BENCHMARK", help="Benchmark document (YAML or JSON), or a published version SLUG@VERSION "
                                  "(SLUG@latest: the newest), which runs as published whatever the files say.")],
    report_dir: Annotated[Path | None, typer.Option(help="Write each task's report and the summary here.")] = None,
    resume: Annotated[str | None, typer.Option(help="Resume this run id: only missing or errored tasks run.")] = None,
    override: Annotated[list[str], typer.Option(help="KEY=VALUE run override for every task (repeatable).")] = [],  # noqa: B006
    matrix: Annotated[list[str], typer.Option(help="KEY=V1,V2: a sweep, every task with each value, in one run "
                                              "(repeatable: the keys are crossed).")] = [],  # noqa: B006
    epochs: Annotated[int | None, typer.Option(help="Override the document's epochs.", min=1)] = None,
    concurrency: Annotated[int | None, typer.Option(help="Override the document's concurrency.", min=1)] = None,
    baseline: Annotated[str | None, typer.Option(help="Compare with this run instead of the previous finished "
                                                 "one: a run id, SLUG/RUN_ID, or SLUG (its latest).")] = None,
    fail_under: Annotated[float | None, typer.Option(help="Exit 4 when the mean score is under this.",
                                                     min=0.0, max=1.0)] = None,
    fail_on_regression: Annotated[bool, typer.Option(help="Exit 4 when the paired comparison with the baseline "
                                                     "marks all task runs worse.")] = False,
    confidence: Annotated[float, typer.Option(help="Confidence of the comparison's verdicts.", min=0.5, max=0.999)]
    = 0.95,
) -> None:
    """Run a benchmark with live progress; exit 0 when it ran (whatever the scores), 1 when it failed, 2 invalid,
    4 when a gate (--fail-under, --fail-on-regression) failed, 5 when more task runs failed for infrastructure
    than its infrastructure.max_error_rate allows."""
    from prefect_agentenv.documents.benchmark_validation import validate_benchmark_file

    overrides = _overrides(override)
    axes = _matrix(matrix)
    if report_dir is not None:
        _check_writable(report_dir / "summary.json", "--report-dir")
    published = _published_ref(bench_file)
    slug = published[0] if published is not None else None
    if published is not None:
        _check_published(*published)
    else:
        checked = validate_benchmark_file(bench_file)
        if checked.problems:
            typer.echo(f"{bench_file}: {len(checked.problems)} problem(s)", err=True)
            for p in checked.problems:
                typer.echo(f"  - {p.render()}", err=True)
            raise typer.Exit(2)
        slug = checked.benchmark.slug if checked.benchmark is not None else None
    set_prefect_defaults()
    if baseline is not None:
        _check_baseline(baseline, slug)
    from prefect_agentenv.cli_progress import run_benchmark_with_progress
    from prefect_agentenv.results.baseline import Gate
    from prefect_agentenv.runtime.leftovers import sweep_dead_runs
    from prefect_agentenv.settings import get_settings

    sweep_dead_runs(get_settings().runs_dir)  # what killed runs left behind (logged)
    gate = Gate(baseline=baseline, confidence=confidence, fail_under=fail_under, fail_on_regression=fail_on_regression)
    code = run_benchmark_with_progress(bench_file, run_id=resume, overrides=overrides, epochs=epochs,
                                       concurrency=concurrency, report_dir=report_dir, gate=gate, matrix=axes)
    raise typer.Exit(code)


def _published_ref(text: str) -> tuple[str, str] | None:
    """``(slug, version)`` when ``text`` names a published version (``SLUG@VERSION``) and no file."""
    from prefect_agentenv.documents.published import parse_published_ref

    ref = parse_published_ref(text)
    return ref if ref is not None and not Path(text).exists() else None


def _check_published(slug: str, version: str) -> None:
    """Refuse a published version that cannot be read (exit 2, with the versions there are)."""
    set_prefect_defaults()  # an S3 store's block is loaded through the Prefect API
    from prefect_agentenv.artifacts import get_artifact_store
    from prefect_agentenv.documents.published_store import read_published
    from prefect_agentenv.exceptions import AgentEnvError

    try:
        with get_artifact_store() as store:
            read_published(store, slug, version)
    except AgentEnvError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


def _check_baseline(baseline: str, slug: str | None) -> None:
    """Refuse a baseline the artifact store does not have, before anything runs (exit 2)."""
    from prefect_agentenv.artifacts import ArtifactError, get_artifact_store
    from prefect_agentenv.results.run_lookup import find_run

    try:
        with get_artifact_store() as store:
            find_run(store, baseline, slug=slug)
    except ArtifactError as exc:
        typer.echo(f"error: --baseline: {exc}", err=True)
        raise typer.Exit(2) from None


@app.command(name="serve")
def serve_command(
    benchmark_file: Annotated[str, typer.Option(
        "--benchmark", help="Benchmark the nightly deployment runs: a file, or a published version SLUG@VERSION.")
    ] = "examples/benchmark.yaml",
    cron: Annotated[str, typer.Option(help="Schedule of the nightly deployment (cron).")] = "0 2 * * *",
    no_schedule: Annotated[bool, typer.Option(help="Serve the nightly deployment without its schedule.")] = False,
    limit: Annotated[int | None, typer.Option(help="At most this many runs at once.")] = None,
) -> None:
    """Serve the agent-task, benchmark/nightly and rescore/rescore deployments from this process (Ctrl-C stops)."""
    set_prefect_defaults()
    # Imported here so other commands do not pay for Prefect's runner.
    from prefect_agentenv.deployments import serve_all

    published = _published_ref(benchmark_file)
    if published is not None:
        _check_published(*published)
    elif not Path(benchmark_file).exists():
        typer.echo(f"error: {benchmark_file} does not exist", err=True)
        raise typer.Exit(2)
    serve_all(benchmark_file, cron=None if no_schedule else cron, limit=limit)


@app.command(name="upgrade-blocks")
def upgrade_blocks_command() -> None:
    """Save env, agent, model and store blocks again under their current schema (masks secret_env values
    of blocks saved by earlier versions)."""
    import asyncio

    from prefect_agentenv.blocks.upgrade import upgrade_blocks

    upgraded = asyncio.run(upgrade_blocks())
    for name in upgraded:
        typer.echo(f"upgraded {name}")
    typer.echo(f"{len(upgraded)} block(s) upgraded" if upgraded else "every block is up to date")


app.command(name="publish")(publish_command)
app.command(name="view")(view_command)
app.command(name="compare")(compare_command)
app.command(name="rescore")(rescore_command)
app.command(name="rollout")(rollout_command)
app.command(name="review")(review_command)


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


if __name__ == "__main__":
    main()
