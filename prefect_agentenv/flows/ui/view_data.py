"""Gather what the HTML report shows from the artifact store: results, reports, the runs index.

A benchmark run's view reads its ``results.jsonl``, each task run's stored report (for the
transcript), and the slug's runs index with every earlier finished run's results (for the
trend, one line per sweep cell). The regressions it lists and flags are those the paired
comparison with each run's baseline found when the run finished (its index entry), so the
report says what the summary says. The records the transcripts link —
trajectories, judge trajectories, collected files, snapshots, reports — are copied next to
the pages (``files/…``) when they are in this store and small enough, so the links open
wherever the report folder is opened.
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from statistics import fmean

from prefect.settings import PREFECT_UI_URL

from prefect_agentenv.artifacts import ArtifactBackend, ArtifactError
from prefect_agentenv.results import (
    RunKey,
    SweepSummary,
    TaskResult,
    axis_values,
    latest_per_run_key,
    mean_interval,
    results_of_cell,
    summarize,
    summarize_sweep,
)
from prefect_agentenv.results.control_log import read_changes
from prefect_agentenv.results.store.run_store import RunEntry, list_runs, result_from_report, run_folder
from prefect_agentenv.results.store.scoring_store import read_version
from prefect_agentenv.results.task_report import TaskReport
from prefect_agentenv.viewer import render_pages, write_files
from prefect_agentenv.viewer.models import ReportView, ScoreBar, TaskRow, TrendPoint

logger = logging.getLogger("prefect_agentenv.view")

MAX_TREND_RUNS = 30
MAX_ATTACHMENT_BYTES = 5_000_000
"""A record bigger than this is linked where it is stored instead of copied into the report."""
REPORT_FOLDER = "report"
"""Where a benchmark run's HTML report is published, inside its run folder."""

Attachments = dict[str, bytes]


def benchmark_view(store: ArtifactBackend, slug: str, run_id: str | None = None, *, title: str | None = None,
                   headline: str | None = None, sweep: SweepSummary | None = None) -> ReportView:
    """The view of one benchmark run (the latest in the runs index when ``run_id`` is None); a
    sweep's cells from ``sweep`` when the run gives them, else summarized here.

    Its rows leave the transcripts out: :func:`benchmark_report_files` reads each run's report
    while it renders that run's page, so a run of thousands of task runs never holds them all.

    Raises:
        ArtifactError: the benchmark has no such run in this store.
    """
    runs = list_runs(store, slug)
    if run_id is None:
        if not runs:
            raise ArtifactError(f"benchmark {slug!r} has no run in {store.location}")
        run_id = runs[-1].run_id
    results = latest_per_run_key(read_version(store, slug, run_id))  # as its summary shows
    if not results and all(r.run_id != run_id for r in runs):
        raise ArtifactError(f"benchmark {slug!r} has no run {run_id!r} in {store.location}")
    summary = summarize(results)
    entry = next((r for r in runs if r.run_id == run_id), None)
    cells = entry.cells if entry else sorted({r.cell for r in results if r.cell is not None})
    if cells and sweep is None:
        sweep = summarize_sweep(results, [(c, {}) for c in cells], {})
    trend = _trend(store, slug, run_id, [r for r in runs if r.finished_at or r.run_id == run_id], results,
                   cells or [None])
    return ReportView(
        kind="benchmark", title=title or f"Benchmark {slug}", slug=slug, run_id=run_id, generated_at=_now(),
        headline=headline or _headline(results), summary=summary, sweep=sweep,
        rows=[_row(r, None) for r in sorted(results, key=lambda r: r.run_key.sort_key())],
        bars=score_bars(results), trend=trend,
        regressions=(entry.regressions or []) if entry else [], prefect_ui_url=PREFECT_UI_URL.value(),
        changes=[c for c in read_changes(store, run_folder(slug, run_id)) if c.kind != "start"])


def benchmark_report_files(store: ArtifactBackend, view: ReportView) -> Iterator[tuple[str, str | bytes]]:
    """Every file of a benchmark run's HTML report, by path inside the report's folder, one at a
    time: for each run the records its page links (copied under ``files/``), then its page; the
    index page last. At most one run's report and copies are in memory at once."""
    copies: list[tuple[str, bytes]] = []

    def full_rows() -> Iterator[TaskRow]:
        for row in view.rows:
            report = _stored_report(store, row.report_url)
            full = row.model_copy(update={"transcript": report.transcript if report else None})
            copies.extend(_copy_linked(view, full, store))  # before its page renders: the page links them
            yield full

    for rel, page in render_pages(view, full_rows()):
        yield from copies
        copies.clear()
        yield rel, page


def publish_benchmark_report(store: ArtifactBackend, slug: str, run_id: str, *, title: str | None = None,
                             headline: str | None = None, sweep: SweepSummary | None = None,
                             folder: Path | None = None) -> str:
    """Render a benchmark run's HTML report into its run folder of the store (and into ``folder``
    on this machine when given), a file at a time, and return the index page's URL.

    The pages go to ``benchmarks/<slug>/<run id>/report/``, the copied records under its ``files/``.
    """
    view = benchmark_view(store, slug, run_id, title=title, headline=headline, sweep=sweep)
    prefix = f"{run_folder(slug, run_id)}/{REPORT_FOLDER}"
    for rel, content in benchmark_report_files(store, view):
        store.put_object(f"{prefix}/{rel}", content)
        if folder is not None:
            try:
                write_files([(rel, content)], folder)
            except OSError as exc:  # the copy on this machine is extra: the store's stays whole
                logger.warning("could not write the HTML report to %s: %s", folder, exc)
                folder = None
    return store.object_url(f"{prefix}/index.html")


def task_view(report: TaskReport, store: ArtifactBackend | None = None, *, tags: Sequence[str] = (),
              report_url: str | None = None) -> tuple[ReportView, Attachments]:
    """The view of one task run, from its report."""
    result = result_from_report(report, RunKey(report.task_id), tags=tags, report_url=report_url)
    view = ReportView(
        kind="task", title=f"Task {report.task_id}", run_id=report.flow_run_id, generated_at=_now(),
        headline=_headline([result]), summary=summarize([result]), rows=[_row(result, report)],
        bars=score_bars([result]), prefect_ui_url=PREFECT_UI_URL.value())
    return _attach(view, store) if store is not None else (view, {})


def score_bars(results: Sequence[TaskResult]) -> list[ScoreBar]:
    """Mean score per tag and per axis with Student-t intervals, by the summary's denominator policy."""
    by_tag: dict[str, list[float]] = defaultdict(list)
    for r in results:
        if r.counted:
            for tag in dict.fromkeys(r.tags):
                by_tag[tag].append(r.counted_score)
    bars = [_bar("tag", tag, values) for tag, values in sorted(by_tag.items())]
    return bars + [_bar("axis", axis, values) for axis, values in sorted(axis_values(results).items())]


def _bar(kind: str, label: str, values: list[float]) -> ScoreBar:
    ci = mean_interval(values)
    return ScoreBar(kind=kind, label=label, mean=fmean(values), n=len(values),  # type: ignore[arg-type]
                    low=ci.low if ci else None, high=ci.high if ci else None)


def _trend(store: ArtifactBackend, slug: str, run_id: str, runs: Sequence[RunEntry], current: list[TaskResult],
           cells: Sequence[str | None]) -> list[TrendPoint]:
    """Mean score and pass rate of the last runs, per cell (``None``: runs that were no sweep), up
    to this one; a point is flagged when the paired comparison with that run's baseline found a
    regression (in that cell), as its index entry recorded when it finished."""
    points: list[TrendPoint] = []
    for entry in list(runs)[-MAX_TREND_RUNS:]:
        rid = entry.run_id
        results = current if rid == run_id else latest_per_run_key(read_version(store, slug, rid))
        for cell in cells:
            own = results_of_cell(results, cell)
            if not own:  # the run did not run this cell (or was a sweep, for runs that were none)
                continue
            summary = summarize(own)
            flagged = cell in entry.regressed_cells if cell is not None else bool(entry.regressions)
            points.append(TrendPoint(run_id=rid, started_at=entry.started_at, mean_score=summary.mean_score,
                                     pass_rate=summary.pass_rate, regression=flagged, current=rid == run_id, cell=cell))
        if rid == run_id:
            break
    return points


def _row(result: TaskResult, report: TaskReport | None) -> TaskRow:
    return TaskRow(task_id=result.task_id, seed_index=result.seed_index, epoch=result.epoch, cell=result.cell,
                   tags=result.tags,
                   outcome=result.outcome.value, score=result.score, duration_s=result.duration_s,
                   error=result.error, flow_run_id=result.flow_run_id, task_run_id=result.task_run_id,
                   report_url=result.report_url,
                   transcript=report.transcript if report else None,
                   judges=[f"{t.verifier_id}: {t.mark()}" for t in result.judges])


def _stored_report(store: ArtifactBackend, url: str | None) -> TaskReport | None:
    key = store.key_of(url)
    if key is None:
        return None
    try:
        return TaskReport.model_validate_json(store.get_object(key))
    except (ArtifactError, ValueError) as exc:
        logger.info("report %s unreadable: %s", url, exc)
        return None


def _attach(view: ReportView, store: ArtifactBackend) -> tuple[ReportView, Attachments]:
    """Copy the records the pages link (when in this store and small) under ``files/``."""
    copies: Attachments = {}
    for row in view.rows:
        copies.update(_copy_linked(view, row, store))
    return view, copies


def _copy_linked(view: ReportView, row: TaskRow, store: ArtifactBackend) -> Iterator[tuple[str, bytes]]:
    """The records one run's page links (when in this store and small), each under ``files/``,
    entered in ``view.attachments`` so the page links the copy."""
    folder = "files/" + row.page.removeprefix("runs/").removesuffix(".html")
    for url in _linked_urls(row):
        if url in view.attachments:
            continue
        data = _read_url(store, url)
        if data is None:
            continue
        name = re.sub(r"[^A-Za-z0-9._-]+", "-", url.rsplit("/", 1)[-1]) or "file"
        rel = f"{folder}/{len(view.attachments)}-{name}"
        view.attachments[url] = rel
        yield rel, data


def _linked_urls(row: TaskRow) -> list[str]:
    urls = [row.report_url] if row.report_url else []
    t = row.transcript
    if t is not None:
        urls += [p.trajectory_url for p in t.prompts if p.trajectory_url]
        urls += [v.judge.trajectory_url for v in t.verifiers if v.judge and v.judge.trajectory_url]
        urls += [f.url for f in t.files]
        urls += [u for e in t.env_changes for u in (e.before_url, e.after_url) if u]
    return urls


def _read_url(store: ArtifactBackend, url: str) -> bytes | None:
    """A record or artifact file of this store by its URL; None when elsewhere, missing or too big."""
    key = store.key_of(url)
    data: bytes | None
    try:
        if key is not None:
            data = store.get_object(key)
        else:
            data = _artifact_file(store, url)
    except ArtifactError:
        return None
    return data if data is not None and len(data) <= MAX_ATTACHMENT_BYTES else None


def _artifact_file(store: ArtifactBackend, url: str) -> bytes | None:
    """An artifact file by its URL: ``…/artifacts/<id>/<version>/files/<name>``."""
    match = re.search(r"/artifacts/([^/]+)/([^/]+)/files/(.+)$", url)
    if match is None:
        return None
    artifact_id, version, name = match.groups()
    if store.file_url(artifact_id, name, version=version) != url:
        return None
    return store.read_file(artifact_id, name, version=version)


def _headline(results: Sequence[TaskResult]) -> str:
    s = summarize(results).headline
    mean = "—" if s.mean_score is None else f"{s.mean_score:.3f}"
    rate = "—" if s.pass_rate is None else f"{s.pass_rate:.0%}"
    return (f"mean score {mean}, pass rate {rate} ({s.passed}/{s.denominator} passed; {s.errored} errored, "
            f"{s.unscored} unscored)")


def _now() -> str:
    return datetime.now(UTC).isoformat()
