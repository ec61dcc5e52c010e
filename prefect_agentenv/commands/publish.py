"""``prefect-agentenv publish``: freeze a benchmark as ``slug@version``, check files against it, list versions.

Exit codes: 0 published (or already published with this content), the files match, or the list
was shown; 1 ``--check`` found drift, or the store failed; 2 the benchmark is invalid, an
artifact it loads is not published, or its version is published with other content.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from prefect_agentenv.exit_codes import ExitCode

if TYPE_CHECKING:
    from prefect_agentenv.artifacts import ArtifactBackend
    from prefect_agentenv.documents.published.snapshot import PublishedBenchmark

MATCHED, DRIFTED, INVALID = ExitCode.OK, ExitCode.FAILED, ExitCode.INVALID
STORE_ERROR = 1


def publish_command(
    target: Annotated[str, typer.Argument(
        metavar="BENCHMARK_FILE", help="The benchmark document; with --list, a benchmark document or its slug.")],
    check: Annotated[bool, typer.Option(
        "--check", help="Say whether the files still match their published version, task by task "
                        "(exit 1 when they drift); publishes nothing.")] = False,
    list_: Annotated[bool, typer.Option("--list", help="List the published versions of the benchmark.")] = False,
) -> None:
    """Freeze a benchmark as SLUG@VERSION in the artifact store: every task, the seed rows, the settings and
    the artifact versions it loads, under one content hash. `bench SLUG@VERSION` then runs that copy."""
    if check and list_:
        raise _fail("--check and --list exclude each other", INVALID)
    from prefect_agentenv.commands.artifact import open_store  # the store's errors: one line and an exit code

    with open_store() as store:
        if list_:
            _list(store, target)
            return
        frozen = _frozen(target, store)
        if check:
            raise typer.Exit(_check(store, frozen, target))
        _publish(store, frozen, target)


def _frozen(target: str, store: ArtifactBackend) -> PublishedBenchmark:
    # Imported here (and below) so the other commands do not pay for the documents and the store.
    from prefect_agentenv.documents.published.snapshot import freeze_benchmark
    from prefect_agentenv.exceptions import TaskDocumentError

    if not Path(target).is_file():
        raise _fail(f"{target} is not a file: give the benchmark document", INVALID)
    try:
        frozen = freeze_benchmark(target, store)
    except TaskDocumentError as exc:
        typer.echo(f"{target}: {len(exc.problems)} problem(s)", err=True)
        for problem in exc.problems:
            typer.echo(f"  - {problem.render()}", err=True)
        raise typer.Exit(INVALID) from None
    for warning in frozen.warnings:
        typer.echo(f"{target}: {warning.severity}: {warning.render()}", err=True)
    return frozen.record


def _publish(store: ArtifactBackend, record: PublishedBenchmark, target: str) -> None:
    from prefect_agentenv.documents.published.store import PublishConflictError, publish

    try:
        done = publish(store, record)
    except PublishConflictError as exc:
        typer.echo(f"error: {exc}", err=True)
        for line in exc.differences:
            typer.echo(f"  - {line}", err=True)
        raise typer.Exit(INVALID) from None
    ref, stored = done.record.ref, done.record
    if not done.stored:
        typer.echo(f"{ref} is already published with this content (sha256 {ref.hash}, "
                   f"{stored.published_at:%Y-%m-%d %H:%M:%S}Z): nothing to do")
        return
    tasks = len({t.base_id for t in stored.tasks})
    typer.echo(f"published {ref} (sha256 {ref.hash}) to {store.location}: {tasks} task(s), "
               f"{len(stored.tasks)} task run(s) per epoch, {len(stored.artifacts)} artifact(s) pinned")
    for task in stored.tasks:
        typer.echo(f"  task {task.task_id}  sha256:{task.sha256}")
    for pin in stored.artifacts:
        typer.echo(f"  artifact {pin.id}@{pin.version}  ({pin.kind}; written as {pin.written})")
    typer.echo(f"run it with: prefect-agentenv bench {ref}   (it runs this frozen copy, not the files)")


def _check(store: ArtifactBackend, record: PublishedBenchmark, target: str) -> int:
    from prefect_agentenv.documents.published.store import check, list_published

    drift = check(store, record)
    name = f"{record.slug}@{record.version}"
    if drift.published is None:
        known = ", ".join(r.version for r in list_published(store, record.slug)) or "none"
        typer.echo(f"{name} is not published yet (published versions: {known}): "
                   f"`prefect-agentenv publish {target}` freezes it")
        return MATCHED
    when = f"published {drift.published.published_at:%Y-%m-%d %H:%M:%S}Z, sha256 {drift.published.hash[:12]}…"
    if not drift.drifted:
        typer.echo(f"{target} matches {name} ({when})")
        return MATCHED
    tasks = f"{len(drift.tasks)} task(s) differ: {', '.join(drift.tasks)}" if drift.tasks else "no task differs"
    typer.echo(f"{target} drifts from {name} ({when}; the files now hash to {drift.current_hash[:12]}…); {tasks}")
    for line in drift.differences:
        typer.echo(f"  - {line}")
    typer.echo(f"give the benchmark a new version (version: in {target}) and publish it, or undo the change")
    return DRIFTED


def _list(store: ArtifactBackend, target: str) -> None:
    from prefect_agentenv.documents.loading import ParseError, read_document
    from prefect_agentenv.documents.published.store import list_published

    slug = target
    if Path(target).is_file():
        try:
            data = read_document(target)
        except (ParseError, OSError) as exc:
            raise _fail(f"{target}: {exc}", INVALID) from None
        slug = str(data.get("slug", "")) if isinstance(data, dict) else ""
    versions = list_published(store, slug) if slug else []
    if not versions:
        raise _fail(f"benchmark {slug or target!r} has no published version in {store.location}", INVALID)
    for i, record in enumerate(versions):
        latest = "  (latest)" if i == len(versions) - 1 else ""
        typer.echo(f"{record.slug}@{record.version}  sha256:{record.hash}  "
                   f"{record.published_at:%Y-%m-%d %H:%M:%S}Z  {len(record.tasks)} task run(s) per epoch{latest}")


def _fail(message: str, code: int) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)
