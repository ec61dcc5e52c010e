"""The gate: a pipeline's minimum score and its no-regression check."""

from __future__ import annotations

from prefect_agentenv.results import (
    check_gate,
    compare,
    summarize,
)

from ..result_rows import LLM, SCRIPTED, result, seeded

# -- the gate ----------------------------------------------------------------------------------


def test_no_gate_is_none_and_a_mean_under_the_bar_fails() -> None:
    summary = summarize(seeded("PASSED", 2) + [result("x", "BELOW_ONE", 0.2)])
    assert check_gate(summary, None) is None
    gate = check_gate(summary, None, fail_under=0.9)
    assert gate is not None and not gate.passed and gate.reason == "mean score 0.733 is under 0.9"
    passed = check_gate(summary, None, fail_under=0.5)
    assert passed is not None and passed.passed and passed.reason == "mean score 0.733 is at least 0.5"


def test_a_run_with_nothing_counted_fails_a_minimum_score() -> None:
    gate = check_gate(summarize([result("x", "UNSCORED")]), None, fail_under=0.1)
    assert gate is not None and not gate.passed and "no task run was counted" in gate.reason


def test_the_regression_gate_fails_on_a_real_drop_and_passes_on_a_rerun_and_a_first_run() -> None:
    drop = compare(seeded("FAILED", setup=LLM), seeded("PASSED", setup=SCRIPTED), previous_run_id="base")
    gate = check_gate(summarize(seeded("FAILED")), drop, fail_on_regression=True)
    assert gate is not None and not gate.passed
    assert gate.reason.startswith("worse than run base: all task runs worse: pass rate 100% → 0% over 8 pairs")
    assert "setup differs: agent assistant: scripted 1.0.0 → llm 1.0.0 on mock" in gate.reason
    assert "\n" not in gate.reason
    rerun = compare(seeded("PASSED", setup=SCRIPTED), seeded("PASSED", setup=SCRIPTED), previous_run_id="base")
    kept = check_gate(summarize(seeded("PASSED")), rerun, fail_on_regression=True)
    assert kept is not None and kept.passed and kept.reason.startswith("not worse than run base: all task runs tied")
    first = check_gate(summarize(seeded("PASSED")), None, fail_on_regression=True)
    assert first is not None and first.passed and first.reason == "no baseline run to compare with"


def test_the_regression_gate_looks_at_all_task_runs_together() -> None:
    """One task loses 6 of its 8 epochs, another gains 6: each task row is marked, all task runs
    together are tied, and the gate passes (rows per tag, axis and task are for a person to read)."""
    previous = [result(t, "PASSED" if (t == "t0" or e >= 6) else "FAILED", epoch=e) for t in ("t0", "t1")
                for e in range(8)]
    current = [result(t, "PASSED" if (t == "t1" or e >= 6) else "FAILED", epoch=e) for t in ("t0", "t1")
               for e in range(8)]
    comparison = compare(current, previous)
    assert [(row.name, row.verdict) for row in comparison.by_task] == [("t0", "worse"), ("t1", "better")]
    assert comparison.overall is not None and comparison.overall.verdict == "tied"
    gate = check_gate(summarize(current), comparison, fail_on_regression=True)
    assert gate is not None and gate.passed
    assert comparison.regressions == [comparison.by_task[0].sentence()]
