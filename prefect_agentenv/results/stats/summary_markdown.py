"""The benchmark's markdown artifact: headline with intervals, counts, failures, breakdowns, setup, comparison, tasks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from prefect_agentenv.grading.judge_setup import named_judge_models
from prefect_agentenv.results.rows import TaskResult, latest_per_run_key
from prefect_agentenv.results.stats.run_setup import RunSetup
from prefect_agentenv.results.stats.summary import BenchmarkSummary

if TYPE_CHECKING:
    from prefect_agentenv.results.comparison.compare import Comparison


def summary_markdown(summary: BenchmarkSummary, comparison: Comparison | None = None,
                     results: Sequence[TaskResult] = (), *, title: str = "Benchmark",
                     alert: str | None = None, section: str | None = None) -> str:
    """The benchmark's markdown artifact: headline with intervals, counts, failures, breakdowns, setup, tasks.

    Args:
        summary: from :func:`summarize`.
        comparison: from :func:`compare`, when there is a baseline run.
        results: the run's results, for the per-task table (the last result of each run key).
        title: the heading (the benchmark's name).
        alert: a sentence shown first, in bold (why the benchmark failed).
        section: markdown shown after the counts (a sweep's cells).
    """
    lines = [f"# {title}", ""] + ([f"**{alert}**", ""] if alert else [])
    lines += _headline_lines(summary) + [""] + _count_lines(summary) + _failure_lines(summary) + _usage_lines(summary)
    if section:
        lines += ["", section]
    if summary.by_tag:
        lines += ["", "## By tag", "", "| tag | n | mean score | pass rate | unscored |", "|---|---|---|---|---|"]
        lines += [f"| {cell(tag)} | {b.n} | {_num(b.mean)} | {percentage(b.pass_rate)} | {b.unscored} |"
                  for tag, b in summary.by_tag.items()]
    if summary.by_axis:
        lines += ["", "## By axis", "", "| axis | n | mean score |", "|---|---|---|"]
        lines += [f"| {cell(axis)} | {b.n} | {_num(b.mean)} |" for axis, b in summary.by_axis.items()]
    if summary.setup is not None:
        lines += ["", "## Setup", ""] + setup_lines(summary.setup)
    if summary.judges is not None:
        lines += ["", "## Judges", ""] + judge_lines(summary, latest_per_run_key(results))
    if comparison is not None:
        lines += ["", comparison.markdown()]
    if results:
        lines += ["", "## Tasks", ""] + _task_table(latest_per_run_key(results))
    return "\n".join(lines)


def judge_lines(summary: BenchmarkSummary, runs: Sequence[TaskResult]) -> list[str]:
    """How far the rubric scores can be trusted, and each task's verifier setups with their trust."""
    assert summary.judges is not None
    lines = [summary.judges.sentence() + ". List what can be labelled with `prefect-agentenv calibrate RUN "
             "--template`, then calibrate with `prefect-agentenv calibrate RUN --labels FILE` "
             "(docs/trusting-a-judge.md)."]
    marks = sorted({(run.task_id, t.verifier_id, t.fingerprint, t.mark()) for run in runs for t in run.judges})
    if marks:
        lines += ["", "| task | verifier | judge setup | trust |", "|---|---|---|---|"]
        lines += [f"| {cell(task)} | {cell(vid)} | `{fp}` | {mark} |" for task, vid, fp, mark in marks]
    return lines


def setup_lines(setup: RunSetup) -> list[str]:
    """What produced the run, one bullet per part (``—``: not recorded or none)."""
    agents = ", ".join(f"{a.name}: {a.label()}" for a in setup.agents)
    overrides = ", ".join(f"`{k}={v}`" for k, v in sorted(setup.overrides.items()))
    documents = f"{setup.documents}" + (f" (digest `{setup.documents_sha256[:12]}`)" if setup.documents_sha256 else "")
    lines = [f"- **Benchmark:** {setup.benchmark or '—'} version {setup.benchmark_version or '—'}; "
             f"prefect-agentenv {setup.package_version or '—'}"
             + (f"; published `{setup.published}` (sha256 `{setup.published.hash[:12]}`)" if setup.published else ""),
             f"- **Agents:** {agents or '—'}",
             f"- **Models named in replies:** {', '.join(setup.models) or '—'}",
             f"- **Judge models:** {', '.join(named_judge_models(setup.judge_models)) or '—'}",
             f"- **Overrides:** {overrides or 'none'}",
             f"- **Task documents:** {documents}"]
    if setup.mixed:
        lines.append(f"- **Not the same in every result:** {', '.join(setup.mixed)} (the latest shown)")
    if setup.unknown:
        lines.append(f"- {setup.unknown} result(s) recorded without a setup")
    return lines


def _headline_lines(summary: BenchmarkSummary) -> list[str]:
    mean = _num(summary.mean_score)
    if summary.mean_score_ci:
        ci = summary.mean_score_ci
        mean += f" ({percentage(ci.confidence)} CI {ci.low:.3f}–{ci.high:.3f}, Student t)"
    rate = percentage(summary.pass_rate)
    if summary.pass_rate_ci:
        ci = summary.pass_rate_ci
        rate += f" ({percentage(ci.confidence)} CI {percentage(ci.low)}–{percentage(ci.high)}, Wilson)"
    fraction = f"{summary.counts.passed}/{summary.counts.denominator}"
    lines = [f"**Mean score:** {mean}", "", f"**Pass rate:** {rate} ({fraction})"]
    if summary.k is not None:
        lines += ["", f"**pass@{summary.k}:** {_num(summary.pass_at_k)} · **pass^{summary.k}:** "
                      f"{_num(summary.pass_hat_k)} (over {summary.pass_k_tasks} of {summary.tasks} tasks, "
                      f"{summary.epochs} epoch(s))"]
    return lines


def _count_lines(summary: BenchmarkSummary) -> list[str]:
    c = summary.counts
    return [
        "| outcome | runs |", "|---|---|",
        f"| PASSED | {c.passed} |",
        f"| BELOW_ONE (failed to pass) | {c.below_one} |",
        f"| FAILED (errored, scored 0) | {c.failed} |",
        f"| TIMED_OUT (errored, scored 0) | {c.timed_out} |",
        f"| UNSCORED (not counted) | {c.unscored} |",
        *([f"| of FAILED, infrastructure failures excluded (not counted) | {c.excluded} |"] if c.excluded else []),
        f"| **denominator** | **{c.denominator}** of {c.total} |",
        "",
        f"*{summary.denominator_policy}*",
    ]


def _failure_lines(summary: BenchmarkSummary) -> list[str]:
    """Infrastructure failures and retries, when there were any (agent failures are the outcomes)."""
    f = summary.failures
    if not (f.infrastructure or f.retried):
        return []
    lines = ["", "## Infrastructure failures", "",
             f"{f.infrastructure} task run(s) failed for infrastructure after their retries "
             f"({percentage(f.infrastructure_rate)} of {summary.counts.total}); {f.retried} were retried, "
             f"{f.recovered} of them recovered. "
             + ("They are left out of the mean and the pass rate." if summary.counts.excluded
                else "They count as FAILED, scored 0."), ""]
    if f.infrastructure_reasons:
        lines += ["| reason | runs |", "|---|---|"]
        lines += [f"| {cell(reason)} | {n} |" for reason, n in f.infrastructure_reasons.items()]
    return lines


def _outcomecell(run: TaskResult) -> str:
    """The outcome, with the infrastructure failure or the retries behind it when there are any."""
    notes = [run.failure.label()] if run.failure and (run.failure.infrastructure or run.errored) else []
    if run.failure and run.failure.excluded:
        notes.append("excluded")
    if run.attempts > 1:
        notes.append(f"{run.attempts} attempts")
    return run.outcome.value + (f" ({cell(', '.join(notes))})" if notes else "")


def _usage_lines(summary: BenchmarkSummary) -> list[str]:
    """Tokens and cost over the runs, when any run reported them (nothing otherwise)."""
    usage = summary.usage
    if usage is None:
        return []
    parts = [f"{usage.input_tokens:,} input tokens" if usage.input_tokens is not None else "input tokens unknown",
             f"{usage.output_tokens:,} output tokens" if usage.output_tokens is not None else "output tokens unknown"]
    if usage.cost_usd is not None:
        parts.append(f"${usage.cost_usd:.4f}")
    return ["", "Usage: " + ", ".join(parts) + "."]


def _task_table(runs: Sequence[TaskResult]) -> list[str]:
    lines = ["| task | seed | epoch | score | outcome | duration (s) | links |", "|---|---|---|---|---|---|---|"]
    for run in sorted(runs, key=lambda r: r.run_key.sort_key()):
        seed = cell(", ".join(f"{k}={v}" for k, v in run.seed.items())) or str(run.seed_index)
        name = run.task_id if run.cell is None else f"{run.task_id} · {run.cell}"
        lines.append(f"| {cell(name)} | {seed} | {run.epoch} | {_num(run.score)} | {_outcomecell(run)} | "
                     f"{run.duration_s:.1f} | {_links(run)} |")
    return lines


def _links(run: TaskResult) -> str:
    links = [f"[report]({run.report_url})"] if run.report_url else []
    links += [f"[{cell(name)}]({url})" for name, url in sorted(run.files.items())]
    return " ".join(links)


def task_label(task_id: str, seed_index: int) -> str:
    """How a task ``(task_id, seed_index)`` is named in tables and regression sentences."""
    return f"{task_id} [seed {seed_index}]"


def cell(text: str) -> str:
    """Text safe inside a markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def percentage(value: float | None) -> str:
    """A share as a percentage with one decimal ("—" when undefined)."""
    return "—" if value is None else f"{value * 100:.1f}%".replace(".0%", "%")
