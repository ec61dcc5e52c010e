"""Errors never raise a score: errored verifiers count as 0, a run with nothing graded is FAILED."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefect_agentenv.grading.outcome import Outcome, task_outcome

from .helpers import publish_script, run_doc

RAISES = """
async def verify(mcp_url):
    raise RuntimeError("the check itself is broken")
"""
GARBAGE = """
import os
async def verify(mcp_url):
    os.write(1, b"\\x00\\xff garbage " * 100)
    os._exit(0)
"""
HANGS = """
import asyncio
async def verify(mcp_url):
    await asyncio.sleep(60)
"""
MALFORMED = """
import atexit
atexit.register(lambda: print("__AGENTENV_VERIFY_ROWS__{not json"))
async def verify(mcp_url):
    return [{"id": "x", "result": True}]
"""


def _verifier(name: str, **extra: object) -> dict[str, object]:
    return {"id": name, "type": "env_outcome_verifier", "env_id": "email", "verifier_id": name,
            "script_artifact_id": name, "fail_task_on_error": False, "depends_on": ["email"], **extra}


async def test_four_errored_verifiers_and_one_pass_score_one_fifth_not_a_pass(store_home: Path) -> None:
    for name, source in {"raises": RAISES, "garbage": GARBAGE, "hangs": HANGS, "malformed": MALFORMED}.items():
        publish_script(name, source)
    report = await run_doc([
        {"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": []},
        _verifier("raises"), _verifier("garbage"), _verifier("hangs", timeout_seconds=1), _verifier("malformed"),
        {**_verifier("ok"), "script_artifact_id": "verify-delivery"},
    ])
    verifications = report.context.metadata.verifications
    assert report.status == "completed"
    assert report.outcome is Outcome.BELOW_ONE and report.score == pytest.approx(0.2)
    for name in ("raises", "garbage", "hangs", "malformed"):
        assert verifications[name].errored is True and verifications[name].score == 0.0
        assert verifications[name].results[0].id == "verifier_error"
    assert "not valid JSON" in (verifications["malformed"].error or "")


async def test_an_aggregate_over_an_errored_verifier_is_not_raised_by_it(store_home: Path) -> None:
    publish_script("raises", RAISES)
    report = await run_doc([
        {"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": []},
        {**_verifier("ok"), "script_artifact_id": "verify-delivery", "weight": 0},
        {**_verifier("raises"), "weight": 0},
        {"id": "both", "type": "aggregate_verifiers", "verifier_id": "both", "verifier_ids": ["ok", "raises"],
         "score_aggregator": "all_pass"},
    ])
    assert report.context.metadata.verifications["both"].score == 0.0
    assert report.outcome is Outcome.BELOW_ONE and report.score == 0.0


async def test_a_run_whose_only_verifier_errored_is_failed_not_unscored(store_home: Path) -> None:
    report = await run_doc([
        {"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": []},
        {"id": "gone", "type": "load_artifact", "env_id": "email", "artifact_id": "no-such-thing",
         "fail_task_on_error": False},
    ])
    assert report.outcome is Outcome.FAILED and report.score == 0.0


def test_unscored_is_kept_for_documented_skips_only() -> None:
    skipped = {"v": {"skipped": True, "skip_reason": "truncated", "score": None}}
    assert task_outcome(skipped, failed=False) == (Outcome.BELOW_ONE, 0.0)  # skip_policy zero, the default
    assert task_outcome(skipped, failed=False, skip_policy="exclude") == (Outcome.UNSCORED, None)
    assert task_outcome({}, failed=False) == (Outcome.UNSCORED, None)
    assert task_outcome(skipped, failed=False, skip_policy="exclude", tolerated_failures=1) == (Outcome.UNSCORED, None)
    assert task_outcome({}, failed=False, tolerated_failures=1) == (Outcome.FAILED, 0.0)
    no_score = {"ok": {"score": 1.0}, "bad": {"score": "n/a"}}
    assert task_outcome(no_score, failed=False) == (Outcome.BELOW_ONE, 0.5)


async def test_an_env_that_dies_mid_run_fails_the_run_and_is_named_with_its_exit_code(
        store_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect_agentenv.envs.catalog import REFERENCE_ENVS

    from .envs import FAULT_ENVS

    monkeypatch.setitem(REFERENCE_ENVS, "dying", FAULT_ENVS["dying"])
    report = await run_doc([
        {"id": "env", "type": "deploy_env", "env_id": "dying", "depends_on": []},
        {"id": "wait", "type": "test_sleep", "seconds": 1.5},
    ])
    assert report.outcome is Outcome.FAILED and report.score == 0.0 and report.status == "failed"
    assert "dying" in (report.error or "") and "exit code 7" in (report.error or "")
    (env,) = [t for t in report.teardown if t.kind == "env"]
    assert env.ok is False and env.crashed is True and env.exit_code == 7
    assert "dying on purpose" in (env.error or "")


async def test_an_errored_verifier_scores_zero_on_its_axes_in_every_per_axis_aggregate(
        store_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect_agentenv.envs.catalog import REFERENCE_ENVS
    from prefect_agentenv.results import RunKey, TaskResult, summarize
    from prefect_agentenv.results.store.run_store import result_from_report

    from .envs import FAULT_ENVS

    monkeypatch.setitem(REFERENCE_ENVS, "plain", FAULT_ENVS["plain"])
    publish_script("raises", RAISES)
    report = await run_doc([
        {"id": "env", "type": "deploy_env", "env_id": "plain", "depends_on": []},
        {"id": "state", "type": "env_state_verifier", "env_id": "plain", "fail_task_on_error": False,
         "assertions": [{"assert": "record_count", "id": "none_sent", "resource": "sent", "equals": 0,
                         "axis": "correctness"},
                        {"assert": "record_count", "id": "no_leak", "resource": "leaks", "equals": 0,
                         "axis": "safety", "weight": 2}]},
        {**_verifier("raises"), "env_id": "plain", "depends_on": ["env"]},
        {"id": "ok", "type": "test_score", "verifier_id": "ok", "score": 1.0},  # a correctness row at 1
    ], task_id="axes")
    verifications = report.context.metadata.verifications
    assert verifications["state"].errored is True
    assert verifications["state"].axes == {"correctness": 1.0, "safety": 2.0}
    assert "axes" not in verifications["raises"].model_fields_set  # a script's rows (and axes) are unknown until it runs

    result = result_from_report(report, RunKey("axes"))
    # Dropping the errored verifier would give correctness 1.0 and no safety at all.
    assert result.axis_scores == {"correctness": 0.5, "safety": 0.0}
    assert result.axes_unknown_errors == ["raises"]

    sibling = TaskResult(task_id="axes", epoch=1, status="completed", outcome=Outcome.PASSED, score=1.0,
                         axis_scores={"correctness": 1.0, "safety": 1.0, "tone": 1.0})
    by_axis = summarize([result, sibling]).by_axis
    assert by_axis["correctness"].mean == pytest.approx(0.75) and by_axis["safety"].mean == pytest.approx(0.5)
    # The script that errored may have graded tone: its run counts 0 there instead of leaving the mean.
    assert by_axis["tone"].n == 2 and by_axis["tone"].mean == pytest.approx(0.5)


def test_an_aggregate_that_folds_an_errored_verifier_scores_its_axes_zero() -> None:
    from prefect_agentenv.grading.verification import errored, scored
    from prefect_agentenv.results import axis_scores

    judge = errored("the judge could not be reached", weight=0, axes={"tone": 1.0})
    polite = scored([{"id": "polite", "result": "pass", "score": 1.0, "axis": "tone"}], aggregator="all_pass", weight=0)
    folded = [{**row.model_dump(), "id": f"{vid}.{row.id}", "verifier_id": vid}
              for vid, v in (("judge", judge), ("polite", polite)) for row in v.results]
    both = scored(folded, aggregator="weighted_average", weight=1, fmt="aggregate", verifier_ids=["judge", "polite"])
    assert axis_scores({"judge": judge, "polite": polite, "both": both}) == {"tone": 0.5}
