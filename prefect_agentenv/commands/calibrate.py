"""``prefect-agentenv calibrate RUN [--labels FILE]``: a run's judges against human labels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

_RUN_HELP = "RUN_ID, SLUG/RUN_ID, or SLUG (its latest finished run)."


def calibrate_command(
    run: Annotated[str, typer.Argument(metavar="RUN", help=_RUN_HELP)],
    labels: Annotated[Path | None, typer.Option("--labels", metavar="FILE", help="labels.jsonl or a .csv of human "
                                                "labels to add to the run's labels first (a new version; none is "
                                                "overwritten).")] = None,
    reviewer: Annotated[str | None, typer.Option(help="The reviewer of the file's labels that name none.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the calibration records as JSON.")] = False,
) -> None:
    """Compare each judge and the panel of the run's rubric verifiers with the human labels, per criterion
    and overall (agreement, Cohen's kappa, TPR/TNR with Wilson intervals and their counts), and record the
    calibration of each judge setup. Exit 0, 1 when no label matches a judged criterion, 2 on invalid input."""
    # Imported here so the other commands do not pay for the store and the statistics.
    from prefect_agentenv.artifacts import ArtifactError, get_artifact_store
    from prefect_agentenv.commands._prefect_server import use_prefect_server

    use_prefect_server(running_only=True)  # an S3 store's block is read through the Prefect API
    from prefect_agentenv.results.calibration_markdown import calibration_markdown
    from prefect_agentenv.results.calibration_run import calibrate_run
    from prefect_agentenv.results.labels import LabelFileError

    try:
        with get_artifact_store() as store:
            found, records = calibrate_run(store, run, labels=labels, reviewer=reviewer)
    except (ArtifactError, LabelFileError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    if as_json:
        typer.echo(json.dumps([r.model_dump(mode="json") for r in records], indent=2))
    else:
        typer.echo(f"# Calibration of {found.slug}/{found.run_id}\n\n{calibration_markdown(records)}")
    if not records:
        raise typer.Exit(1)

