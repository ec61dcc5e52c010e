"""``prefect-agentenv compare RUN_A RUN_B``: two benchmark runs, pair by pair, from the artifact store."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from prefect_agentenv.exit_codes import ExitCode

_RUN_HELP = "RUN_ID, SLUG/RUN_ID, or SLUG (its latest finished run)."


def compare_command(
    baseline: Annotated[str, typer.Argument(metavar="RUN_A", help=f"The baseline run: {_RUN_HELP}")],
    candidate: Annotated[str, typer.Argument(metavar="RUN_B", help=f"The run compared with it: {_RUN_HELP}")],
    confidence: Annotated[float, typer.Option(help="Confidence of the intervals and verdicts.", min=0.5,
                                              max=0.999)] = 0.95,
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples per interval.", min=100)] = 2000,
    seed: Annotated[int, typer.Option(help="The bootstrap's seed (the same seed gives the same intervals).")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON instead of markdown.")]
    = False,
    fail_on_regression: Annotated[bool, typer.Option(help="Exit 4 when RUN_B is worse than RUN_A over all "
                                                     "paired task runs.")] = False,
) -> None:
    """Compare RUN_B with RUN_A pair by pair (task, seed, epoch): McNemar on pass/fail, a paired bootstrap
    and the sign test on scores, per tag, axis and task, and every difference of setup. A rescored run is
    read in the scoring version its summary shows. Exit 0, 2 when a
    run is not in the store, 4 with --fail-on-regression when RUN_B is worse."""
    # Imported here so the other commands do not pay for the store and the statistics.
    from prefect_agentenv.artifacts import ArtifactError, get_artifact_store
    from prefect_agentenv.commands._prefect_server import use_prefect_server

    use_prefect_server(running_only=True)  # an S3 store's block is read through the Prefect API
    from prefect_agentenv.commands._run_home import found_anywhere
    from prefect_agentenv.results import compare
    from prefect_agentenv.results.judges.judge_trust import trust_summary
    from prefect_agentenv.results.store.scoring_store import read_version

    try:
        with get_artifact_store() as store:
            before, after = found_anywhere(store, baseline), found_anywhere(store, candidate)
            previous = read_version(before.store, before.slug, before.run_id)  # the scoring its summary shows
            current = read_version(after.store, after.slug, after.run_id)
    except ArtifactError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(ExitCode.INVALID) from None
    comparison = compare(current, previous, confidence=confidence, resamples=resamples, seed=seed,
                         current_run_id=f"{after.slug}/{after.run_id}", previous_run_id=f"{before.slug}/{before.run_id}")
    if as_json:
        typer.echo(json.dumps(comparison.model_dump(mode="json"), indent=2))
    else:
        typer.echo(f"# {after.slug}/{after.run_id} compared with {before.slug}/{before.run_id}\n")
        for found in (before, after):
            if found.entry is not None and (found.entry.shown_scoring or 1) > 1:
                typer.echo(f"{found.slug}/{found.run_id}: scoring version {found.entry.shown_scoring} "
                           "(rescored; `rescore` lists every version)\n")
        typer.echo(comparison.markdown())
        for found, results in ((after, current), (before, previous)):
            trust = trust_summary(results)
            if trust is not None:
                typer.echo(f"\n**Judges of {found.slug}/{found.run_id}:** {trust.sentence()}.")
    if fail_on_regression and comparison.regressed and comparison.overall is not None:
        typer.echo(f"gate failed: worse than {before.slug}/{before.run_id}: {comparison.overall.sentence()} "
                   f"({comparison.setup.sentence()})", err=True)
        raise typer.Exit(ExitCode.GATE)
