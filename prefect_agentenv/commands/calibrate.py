"""``prefect-agentenv calibrate RUN [--labels FILE] [--record] [--template]``: a run's judges against human labels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from prefect_agentenv.exit_codes import ExitCode

_RUN_HELP = "RUN_ID, SLUG/RUN_ID, or SLUG (its latest finished run)."


def calibrate_command(
    run: Annotated[str, typer.Argument(metavar="RUN", help=_RUN_HELP)],
    labels: Annotated[Path | None, typer.Option("--labels", metavar="FILE", help="labels.jsonl or a .csv of human "
                                                "labels to add to the run's labels (a new version; none is "
                                                "overwritten), then record the calibration.")] = None,
    reviewer: Annotated[str | None, typer.Option(help="The reviewer of the file's labels that name none.")] = None,
    record: Annotated[bool, typer.Option("--record", help="Record the calibration of each judge setup from the "
                                         "label pool (with --labels it is recorded anyway).")] = False,
    template: Annotated[bool, typer.Option("--template", help="Print a label file to fill: one line per judged "
                                           "criterion of the run, label empty, the judge's verdict left out.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the calibration records as JSON.")] = False,
) -> None:
    """Compare each judge and the panel of the run's rubric verifiers with the human labels of their criteria,
    pooled over every run graded under the same judge setup, per criterion and overall (agreement, Cohen's
    kappa, TPR/TNR with Wilson intervals and their counts). Only shows, unless --labels or --record: then each
    setup's calibration is recorded as a new version. Exit 0, 1 when no label matches a judged criterion,
    2 on invalid input."""
    # Imported here so the other commands do not pay for the store and the statistics.
    from prefect_agentenv.artifacts import ArtifactError, get_artifact_store
    from prefect_agentenv.commands._prefect_server import use_prefect_server

    use_prefect_server(running_only=True)  # an S3 store's block is read through the Prefect API
    from prefect_agentenv.results.judges.calibration_markdown import calibration_markdown
    from prefect_agentenv.results.judges.calibration_run import calibrate_run, run_template
    from prefect_agentenv.results.judges.labels import LabelFileError

    if template and (labels is not None or record):
        typer.echo("error: --template prints a label file to fill; give it without --labels and --record", err=True)
        raise typer.Exit(ExitCode.INVALID)
    try:
        with get_artifact_store() as store:
            if template:
                typer.echo(run_template(store, run), nl=False)
                return
            outcome = calibrate_run(store, run, labels=labels, reviewer=reviewer, record=record)
    except (ArtifactError, LabelFileError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(ExitCode.INVALID) from None
    if as_json:
        typer.echo(json.dumps([r.model_dump(mode="json") for r in outcome.records], indent=2))
    else:
        typer.echo(calibration_markdown(outcome))
    if not outcome.records:
        raise typer.Exit(ExitCode.FAILED)
