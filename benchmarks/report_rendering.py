"""What the transcript and the HTML report cost, at benchmark scale.

Builds synthetic transcripts (tool calls with results of a few kilobytes, verifier rows, env
changes) and times, per task run, rendering its transcript artifact (markdown), and, per
benchmark run, rendering the whole HTML report (index + one page per task run); then the peak
memory of rendering a report of 1 000 task runs with every transcript and page held at once (as
the run's end did) against a run at a time (``render_pages`` fed one transcript after another,
each page handed on as it is made, as the run's end now does). Pure CPU: no store, no server.
Run: ``.venv/bin/python benchmarks/report_rendering.py``; results are written to
``benchmarks/results/report_rendering.txt``.
"""

from __future__ import annotations

import platform
import statistics
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

from prefect_agentenv.grading.outcome import Outcome
from prefect_agentenv.results import TaskResult, summarize
from prefect_agentenv.transcript import transcript_markdown
from prefect_agentenv.transcript.models import (
    Clip,
    EnvChanges,
    PromptTranscript,
    RecordChange,
    StepRun,
    ToolCall,
    Transcript,
    VerifierRow,
    VerifierTranscript,
)
from prefect_agentenv.viewer import render, render_pages
from prefect_agentenv.viewer.models import ReportView, TaskRow

RESULTS = Path(__file__).parent / "results" / "report_rendering.txt"


def transcript(task_id: str, tool_calls: int) -> Transcript:
    result = Clip.of('{"emails": [' + ", ".join('{"id": "m%d", "subject": "Q3"}' % i for i in range(120)) + "]}")
    return Transcript(
        task_id=task_id,
        steps=[StepRun(id=f"s{i}", type="prompt_agent", state="completed", started_at=f"2026-01-01T00:00:{i:02d}+00:00",
                       duration_s=1.0, attempts=1) for i in range(8)],
        prompts=[PromptTranscript(prompt_id="p", prompt=Clip.of("Reply to Dana."), reply=Clip.of("Done. " * 200),
                                  tool_calls=[ToolCall(name="email_search", arguments=Clip.of('{"query": "Q3"}'),
                                                       result=result) for _ in range(tool_calls)])],
        verifiers=[VerifierTranscript(verifier_id="v", score=1.0, rows=[
            VerifierRow(id=f"r{i}", result="pass", score=1.0, weight=1.0, justification="fine " * 30)
            for i in range(10)])],
        env_changes=[EnvChanges(env_id="email", before_step="a", after_step="b", changes=[
            RecordChange(change="added", path=f"sent[msg-{i}]", after=Clip.of("x" * 300)) for i in range(20)])])


def _rows(runs: int, with_transcripts: bool) -> Iterator[TaskRow]:
    for i in range(runs):
        yield TaskRow(task_id=f"task-{i}", tags=["a", f"t{i % 5}"], outcome="PASSED", score=1.0, duration_s=10,
                      transcript=transcript(f"task-{i}", 20) if with_transcripts else None)


def _view(rows: list[TaskRow]) -> ReportView:
    results = [TaskResult(task_id=r.task_id, tags=r.tags, status="completed", outcome=Outcome.PASSED, score=1.0)
               for r in rows]
    return ReportView(kind="benchmark", title="bench", generated_at="2026-01-01T00:00:00+00:00", headline="h",
                      summary=summarize(results), rows=rows)


def _peak_mb(fn) -> float:  # type: ignore[no-untyped-def]
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def peak_memory(runs: int) -> list[str]:
    """Peak Python memory of the whole report, all at once against a run at a time."""
    def at_once() -> None:
        pages = render(_view(list(_rows(runs, True))))
        assert len(pages) == runs + 1

    def streamed() -> None:
        made = sum(1 for _ in render_pages(_view(list(_rows(runs, False))), _rows(runs, True)))
        assert made == runs + 1

    whole, one = _peak_mb(at_once), _peak_mb(streamed)
    return [f"HTML report, {runs} task runs, peak memory: all at once {whole:7.1f} MB, "
            f"a run at a time {one:6.1f} MB ({whole / one:.0f}x less)"]


def timed(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main() -> None:
    lines = [f"report_rendering — {platform.python_version()}, {platform.machine()}, median of runs", ""]
    for calls in (10, 100):
        t = transcript("t", calls)
        seconds = timed(lambda t=t: transcript_markdown(t), 20)
        lines.append(f"transcript markdown, {calls:>3} tool calls: {seconds * 1000:8.2f} ms, "
                     f"{len(transcript_markdown(t)):>8,} characters")
    for runs in (10, 200):
        rows = [TaskRow(task_id=f"task-{i}", tags=["a", f"t{i % 5}"], outcome="PASSED", score=1.0, duration_s=10,
                        transcript=transcript(f"task-{i}", 20)) for i in range(runs)]
        results = [TaskResult(task_id=r.task_id, tags=r.tags, status="completed", outcome=Outcome.PASSED, score=1.0)
                   for r in rows]
        view = ReportView(kind="benchmark", title="bench", generated_at="2026-01-01T00:00:00+00:00", headline="h",
                          summary=summarize(results), rows=rows)
        seconds = timed(lambda view=view: render(view), 3)
        size = sum(len(p) for p in render(view).values())
        lines.append(f"HTML report, {runs:>3} task runs (20 tool calls each): {seconds * 1000:8.1f} ms, "
                     f"{size / 1e6:6.1f} MB of pages")
    lines += peak_memory(1000)
    text = "\n".join(lines) + "\n"
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
