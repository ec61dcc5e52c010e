"""What the transcript and the HTML report cost, at benchmark scale.

Builds synthetic transcripts (tool calls with results of a few kilobytes, verifier rows, env
changes) and times, per task run, rendering its transcript artifact (markdown), and, per
benchmark run, rendering the whole HTML report (index + one page per task run). Pure CPU: no
store, no server. Run: ``.venv/bin/python benchmarks/report_rendering.py``; results are written
to ``benchmarks/results/report_rendering.txt``.
"""

from __future__ import annotations

import platform
import statistics
import time
from pathlib import Path

from prefect_agentenv.grading.benchmark_stats import TaskResult, summarize
from prefect_agentenv.grading.outcome import Outcome
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
from prefect_agentenv.viewer import render
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
        seconds = timed(lambda: transcript_markdown(t), 20)
        lines.append(f"transcript markdown, {calls:>3} tool calls: {seconds * 1000:8.2f} ms, "
                     f"{len(transcript_markdown(t)):>8,} characters")
    for runs in (10, 200):
        rows = [TaskRow(task_id=f"task-{i}", tags=["a", f"t{i % 5}"], outcome="PASSED", score=1.0, duration_s=10,
                        transcript=transcript(f"task-{i}", 20)) for i in range(runs)]
        results = [TaskResult(task_id=r.task_id, tags=r.tags, status="completed", outcome=Outcome.PASSED, score=1.0)
                   for r in rows]
        view = ReportView(kind="benchmark", title="bench", generated_at="2026-01-01T00:00:00+00:00", headline="h",
                          summary=summarize(results), rows=rows)
        seconds = timed(lambda: render(view), 3)
        size = sum(len(p) for p in render(view).values())
        lines.append(f"HTML report, {runs:>3} task runs (20 tool calls each): {seconds * 1000:8.1f} ms, "
                     f"{size / 1e6:6.1f} MB of pages")
    text = "\n".join(lines) + "\n"
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
