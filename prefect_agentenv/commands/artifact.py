"""``prefect-agentenv artifact …``: publish, list and fetch versioned artifacts."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from prefect_agentenv.artifacts import (
    ArtifactBackend,
    ArtifactIntegrityError,
    ArtifactMetadata,
    ArtifactRef,
    ArtifactStoreError,
    get_artifact_store,
)
from prefect_agentenv.exceptions import AgentEnvError, ArtifactError, ConfigurationError

artifact_app = typer.Typer(
    help="Publish, list and fetch versioned artifacts in the artifact store.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

USER_ERROR = 2
STORE_ERROR = 1


def _fail(message: str, code: int = USER_ERROR) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


@contextmanager
def open_store() -> Iterator[ArtifactBackend]:
    """The configured store; our errors become a one-line message and an exit code, never a traceback."""
    from prefect_agentenv.commands._prefect_server import use_prefect_server

    use_prefect_server(running_only=True)  # an S3 store's block is read through the Prefect API
    try:
        with get_artifact_store() as store:
            yield store
    except (ArtifactStoreError, ArtifactIntegrityError) as exc:
        raise _fail(str(exc), STORE_ERROR) from None
    except (ArtifactError, ConfigurationError) as exc:
        # Not found, conflict, unsafe key, bad block name: all fixed by changing the command.
        raise _fail(str(exc)) from None
    except AgentEnvError as exc:
        raise _fail(str(exc), STORE_ERROR) from None


def _describe(meta: ArtifactMetadata) -> str:
    if meta.kind == "environment":
        return f"environment artifact for {meta.environment_name!r}, file {meta.files[0].name}"
    if meta.kind == "universe":
        return f"universe of {len(meta.members)}: " + (", ".join(str(m) for m in meta.members) or "empty")
    return f"file artifact, {len(meta.files)} file(s)"


def _collect_files(sources: list[Path]) -> dict[str, Path]:
    """Map stored names to local files: a file by its name, a folder's files by their path in it."""
    files: dict[str, Path] = {}
    for source in sources:
        if source.is_dir():
            found = {p.relative_to(source).as_posix(): p for p in sorted(source.rglob("*")) if p.is_file()}
            if not found:
                raise _fail(f"{source} is an empty folder")
        elif source.is_file():
            found = {source.name: source}
        else:
            raise _fail(f"{source} does not exist")
        for name, path in found.items():
            if name in files:
                raise _fail(f"two files would be stored as {name!r}: {files[name]} and {path}")
            files[name] = path
    return files


@artifact_app.command("put")
def put(
    artifact_id: Annotated[str, typer.Argument(metavar="ID", help="Id of the artifact to publish.")],
    sources: Annotated[list[str], typer.Argument(
        metavar="FILE...", help="Files or folders to publish; with --universe, member artifacts as ID or ID@VERSION.")],
    environment: Annotated[str | None, typer.Option(
        "--environment", metavar="NAME", help="Publish one file as an environment artifact for this env.")] = None,
    universe: Annotated[bool, typer.Option(
        "--universe", help="Publish a universe listing the given file artifacts.")] = False,
    version: Annotated[str | None, typer.Option(
        "--version", metavar="V", help="Version to publish; the next integer when omitted.")] = None,
) -> None:
    """Publish a file artifact, an environment artifact (--environment) or a universe (--universe)."""
    if environment is not None and universe:
        raise _fail("--environment and --universe exclude each other")
    if environment is not None and (len(sources) != 1 or Path(sources[0]).is_dir()):
        raise _fail("an environment artifact holds exactly one file: give one FILE")
    files = {} if universe else _collect_files([Path(s) for s in sources])
    with open_store() as store:
        if universe:
            meta = store.publish_universe(artifact_id, [ArtifactRef.parse(s) for s in sources], version=version)
        elif environment is not None:
            ((name, path),) = files.items()
            meta = store.publish_environment(artifact_id, environment, name, path, version=version)
        else:
            meta = store.publish_files(artifact_id, dict(files), version=version)
        typer.echo(f"published {meta.ref} ({_describe(meta)}) to {store.location}")
        urls = store.file_urls(meta)
        for entry in meta.files:
            typer.echo(f"  {entry.name}  {entry.size} bytes  sha256:{entry.sha256}  {urls[entry.name]}")


@artifact_app.command("list")
def list_(
    artifact_id: Annotated[str | None, typer.Argument(
        metavar="ID", help="List the versions of this artifact; every artifact when omitted.")] = None,
) -> None:
    """List artifacts with their latest version, or the versions of one artifact."""
    with open_store() as store:
        if artifact_id is None:
            for each in store.list_ids():
                versions = store.list_versions(each)
                if versions:
                    typer.echo(f"{each}  latest={versions[-1].version}  versions={len(versions)}  "
                               f"{_described(store, versions[-1])}")
            return
        versions = store.list_versions(artifact_id)
        if not versions:
            raise _fail(f"artifact {artifact_id!r} is not published in {store.location}")
        for meta in versions:
            typer.echo(f"{meta.ref}  {meta.created_at:%Y-%m-%d %H:%M:%S}Z  {_described(store, meta)}")


def _described(store: ArtifactBackend, meta: ArtifactMetadata) -> str:
    """A version in words; a judge setup's calibration with its κ and the labels it rests on, so a
    demotion shows in the list of its versions."""
    from prefect_agentenv.results.judges.calibration import describe_calibration

    return describe_calibration(store, meta) or _describe(meta)


@artifact_app.command("get")
def get(
    ref: Annotated[str, typer.Argument(metavar="ID[@VERSION]", help="The artifact; its latest version by default.")],
    dest: Annotated[Path, typer.Argument(metavar="DEST", help="Folder to write the files into (created if needed).")],
) -> None:
    """Download an artifact's files (a universe: all its members' files) into DEST."""
    if dest.exists() and not dest.is_dir():
        raise _fail(f"{dest} exists and is not a folder")
    with open_store() as store:
        parsed = ArtifactRef.parse(ref)
        meta = store.get_metadata(parsed.id, parsed.version)
        written = store.download(meta, dest)
        typer.echo(f"{meta.ref} ({_describe(meta)}): {len(written)} file(s) written to {dest}")
        for path in written:
            typer.echo(f"  {path}")
