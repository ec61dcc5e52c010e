"""``prefect-agentenv rescore RUN``: a benchmark run scored again from its kept submissions."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer

from prefect_agentenv.commands._options import Verbose
from prefect_agentenv.exit_codes import ExitCode
from prefect_agentenv.prefect_defaults import quiet_engine_logs


def rescore_command(
    run: Annotated[str, typer.Argument(metavar="RUN", help="RUN_ID, SLUG/RUN_ID, or SLUG (its latest finished run).")],
    task: Annotated[Path | None, typer.Option("--task", metavar="DOC", help="Score with this task document's "
                                              "verifiers (every task run of its id) instead of the frozen copy; a "
                                              "Harbor task folder is one.")]
    = None,
    benchmark: Annotated[Path | None, typer.Option("--benchmark", metavar="FILE", help="Score with this benchmark "
                                                   "file's tasks (or a Harbor dataset's), matched by task id and "
                                                   "seed.")] = None,
    override: Annotated[list[str], typer.Option(help="KEY=VALUE run override for the verifiers, e.g. "
                                                "judge_model=gpt-4.1-mini (repeatable).")] = [],  # noqa: B006
    as_json: Annotated[bool, typer.Option("--json", help="Print the rescore as JSON instead of markdown.")] = False,
    verbose: Verbose = False,
) -> None:
    """Restore each task run's kept submission into fresh envs and run the current verifiers and judges
    (no agent is deployed); the scores are a new scoring version of the run, which its summary shows.
    Exit 0, 1 when a task run could not be rescored (it keeps its previous result), 2 on invalid input."""
    from prefect_agentenv.commands._prefect_server import use_prefect_server

    quiet_engine_logs(verbose=verbose)
    use_prefect_server()  # the blocks its envs and judges resolve to, as `run` uses them
    # Imported here so the other commands do not pay for the engine.
    from prefect_agentenv.artifacts import get_artifact_store
    from prefect_agentenv.exceptions import ArtifactError, ConfigurationError, TaskDocumentError
    from prefect_agentenv.flows.rescoring import load_documents, rescore_run

    overrides = dict(pair.split("=", 1) for pair in override if "=" in pair)
    if len(overrides) != len(override):
        typer.echo("error: --override takes KEY=VALUE", err=True)
        raise typer.Exit(ExitCode.INVALID)
    try:
        documents = load_documents(str(task) if task else None, str(benchmark) if benchmark else None)
        with get_artifact_store() as store:
            result = asyncio.run(rescore_run(store, run, documents, overrides=overrides))
    except (TaskDocumentError, ConfigurationError, ArtifactError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(ExitCode.INVALID) from None
    typer.echo(json.dumps(result.model_dump(mode="json"), indent=2) if as_json else result.markdown())
    if result.missing:
        raise typer.Exit(ExitCode.FAILED)
