"""``prefect-agentenv bench``: a benchmark, from a file or a published version, run with live progress.

The options, the document, the baseline and the published version are checked here, before
anything runs; the run and its board are :mod:`.progress`'s, imported only when a benchmark runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from prefect_agentenv.commands._options import Verbose, check_published, check_writable, overrides, published_ref
from prefect_agentenv.exit_codes import ExitCode
from prefect_agentenv.prefect_defaults import BOARD_CONSOLE_LEVEL, quiet_engine_logs

BudgetUsd = Annotated[float | None, typer.Option(
    help="Start no task run once the run's model calls cost this many US dollars; the rest are not run (exit 7).",
    min=0.0)]
BudgetTokens = Annotated[int | None, typer.Option(help="The same, in input plus output tokens.", min=1)]
RecordModelCalls = Annotated[bool, typer.Option(help="Keep every model call of the run in the artifact store, "
                                                "for --replay.")]
RequireCalibratedJudge = Annotated[float | None, typer.Option(
    metavar="KAPPA", help="Exit 6 when a rubric score rests on a judge setup not calibrated against human labels "
                          "to this Cohen's kappa (uncalibrated or stale setups fail too).", min=-1.0, max=1.0)]
Replay = Annotated[str | None, typer.Option(help="Answer every model call from a run of this benchmark that "
                                            "recorded them (--record-model-calls), not from a provider.",
                                            metavar="RUN_ID")]


def bench_command(
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
    budget_usd: BudgetUsd = None,
    budget_tokens: BudgetTokens = None,
    record_model_calls: RecordModelCalls = False,
    replay: Replay = None,
    require_calibrated_judge: RequireCalibratedJudge = None,
    verbose: Verbose = False,
    ephemeral: Annotated[bool, typer.Option(help="Record on Prefect's temporary server, started and stopped by "
                                            "this command, instead of the home's local server.")] = False,
) -> None:
    """Run a benchmark with live progress; exit 0 when it ran (whatever the scores), 1 when it failed, 2 invalid,
    4 when a gate (--fail-under, --fail-on-regression) failed, 5 when more task runs failed for infrastructure
    than its infrastructure.max_error_rate allows, 6 when --require-calibrated-judge failed, 7 when its budget
    (--budget-usd, --budget-tokens, the document's budget) was spent before every task run started."""
    quiet_engine_logs(verbose=verbose, level=BOARD_CONSOLE_LEVEL)  # before anything below imports Prefect
    run_overrides = overrides(override)
    axes = _matrix(matrix)
    if report_dir is not None:
        check_writable(report_dir / "summary.json", "--report-dir")
    slug = _checked_source(bench_file, ephemeral=ephemeral)
    if baseline is not None:
        _check_baseline(baseline, slug)
    from prefect_agentenv.commands.progress import run_benchmark_with_progress
    from prefect_agentenv.results.store.baseline import Gate
    from prefect_agentenv.runtime.resources.leftovers import sweep_dead_runs
    from prefect_agentenv.settings import get_settings

    sweep_dead_runs(get_settings().runs_dir)  # what killed runs left behind (logged)
    gate = Gate(baseline=baseline, confidence=confidence, fail_under=fail_under, fail_on_regression=fail_on_regression,
                require_calibrated_judge=require_calibrated_judge)
    code = run_benchmark_with_progress(bench_file, run_id=resume, overrides=run_overrides, epochs=epochs,
                                       concurrency=concurrency, report_dir=report_dir, gate=gate, matrix=axes,
                                       budget_usd=budget_usd or None, budget_tokens=budget_tokens,
                                       record_model_calls=record_model_calls, replay=replay)
    raise typer.Exit(code)


def _checked_source(bench_file: str, *, ephemeral: bool) -> str | None:
    """The benchmark's slug, its file or published version checked, with the Prefect server the run
    records on in use (a published version's store may be an S3 block read through the API)."""
    from prefect_agentenv.commands._prefect_server import use_prefect_server

    published = published_ref(bench_file)
    if published is None:
        slug = _checked_slug(bench_file)
        use_prefect_server(ephemeral=ephemeral)
        return slug
    use_prefect_server(ephemeral=ephemeral)
    check_published(*published)
    return published[0]


def _matrix(values: list[str]) -> dict[str, list[str]]:
    """``--matrix KEY=V1,V2`` options as a sweep's matrix, refused (exit 2) as a ``matrix:`` block is."""
    from prefect_agentenv.documents.benchmarks.matrix import check_matrix

    given: dict[str, list[str]] = {}
    for v in values:
        key, sep, listed = v.partition("=")
        if not sep or not key or key in given:
            problem = f"{key!r} given twice" if key in given else f"expects KEY=VALUE,VALUE…, got {v!r}"
            typer.echo(f"error: --matrix: {problem}", err=True)
            raise typer.Exit(ExitCode.INVALID)
        given[key] = [value.strip() for value in listed.split(",")] if listed.strip() else []
    try:
        return check_matrix(given)
    except ValueError as exc:
        typer.echo(f"error: --matrix: {str(exc).removeprefix('matrix: ')}", err=True)
        raise typer.Exit(ExitCode.INVALID) from None


def _check_baseline(baseline: str, slug: str | None) -> None:
    """Refuse a baseline the artifact store does not have, before anything runs (exit 2)."""
    from prefect_agentenv.artifacts import ArtifactError, get_artifact_store
    from prefect_agentenv.results.store.run_lookup import find_run

    try:
        with get_artifact_store() as store:
            find_run(store, baseline, slug=slug)
    except ArtifactError as exc:
        typer.echo(f"error: --baseline: {exc}", err=True)
        raise typer.Exit(ExitCode.INVALID) from None


def _checked_slug(bench_file: str) -> str | None:
    """The benchmark file's slug once it validates; every problem listed and exit 2 otherwise."""
    from prefect_agentenv.documents.benchmarks.validation import validate_benchmark_file
    from prefect_agentenv.engine.benchmark_source import hand_over

    checked = validate_benchmark_file(bench_file)
    if checked.problems:
        typer.echo(f"{bench_file}: {len(checked.problems)} problem(s)", err=True)
        for p in checked.problems:
            typer.echo(f"  - {p.render()}", err=True)
        raise typer.Exit(ExitCode.INVALID)
    hand_over(bench_file, checked)  # the flow this command starts uses it: the file is read once
    return checked.benchmark.slug if checked.benchmark is not None else None
