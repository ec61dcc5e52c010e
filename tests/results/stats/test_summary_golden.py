"""The benchmark summary artifact and statistics, byte for byte as recorded in ``golden/``.

Regenerate a file only for an intended change of the output:
``python tests/results/stats/test_summary_golden.py`` rewrites them.
"""

from __future__ import annotations

import json
from pathlib import Path

from prefect_agentenv.grading.outcome import Outcome
from prefect_agentenv.results import TaskResult, compare, summarize, summary_markdown, task_changes

GOLDEN = Path(__file__).parent / "golden"
OUTCOMES = [Outcome.PASSED, Outcome.BELOW_ONE, Outcome.FAILED, Outcome.TIMED_OUT, Outcome.UNSCORED]


def results(shift: int) -> list[TaskResult]:
    """7 tasks × 2 seeds × 3 epochs cycling through every outcome, a crash and a rerun."""
    rows = []
    for t in range(7):
        for seed in range(2):
            for epoch in range(3):
                outcome = OUTCOMES[(t + seed + epoch + shift) % 5]
                score = {Outcome.PASSED: 1.0, Outcome.BELOW_ONE: 0.3 + 0.1 * t,
                         Outcome.UNSCORED: None}.get(outcome, 0.0)
                rows.append(TaskResult(
                    task_id=f"task|{t}", seed_index=seed, seed={"who": f"p{seed}"}, epoch=epoch,
                    tags=["a", f"t{t % 3}"], status="crashed" if (t == 6 and epoch == 2) else "completed",
                    outcome=outcome, score=score, duration_s=1.5 * t, report_url=f"s3://bucket/r{t}",
                    files={"x.txt": "s3://bucket/x"}, axis_scores={"correctness": score or 0.0} if t % 2 else {}))
    rows.append(rows[0].model_copy(update={"outcome": Outcome.PASSED, "score": 1.0}))
    return rows


def rendered() -> dict[str, str]:
    current, previous = results(0), results(2)
    comparison = compare(current, previous, current_run_id="now", previous_run_id="before")
    stats = {f"k={k}": summarize(current, k=k).model_dump(mode="json") for k in (None, 1, 2, 3)}
    stats["comparison"] = comparison.model_dump(mode="json")
    stats["task_changes"] = task_changes(current, previous).model_dump(mode="json")
    return {
        "benchmark_summary.md": summary_markdown(summarize(current), comparison, current, title="Bench") + "\n",
        "benchmark_stats.json": json.dumps(stats, indent=1, sort_keys=True) + "\n",
    }


def test_the_summary_artifact_and_statistics_are_unchanged() -> None:
    for name, text in rendered().items():
        assert text == (GOLDEN / name).read_text(), f"{name} differs from the recorded output"


if __name__ == "__main__":
    for name, text in rendered().items():
        (GOLDEN / name).write_text(text)
