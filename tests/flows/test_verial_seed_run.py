"""Verial's own task, written as its tasks and criteria APIs take it, runs against the records env.

examples/verial/benchmark.yaml holds the seed's two request bodies merged into one task, a task
reaching the records env through its phone, portal and fax interfaces, and a task without a
task_item. The benchmark lends them its env and a dataset artifact their entities bind to.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.documents import expand_tasks, load_benchmark
from prefect_agentenv.flows.agent_task import run_task_document
from prefect_agentenv.results.task_report import TaskReport
from prefect_agentenv.settings import get_settings

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BENCHMARK = EXAMPLES / "verial" / "benchmark.yaml"


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, TaskReport]:
    """Every task of the benchmark, run once against the reference records env."""
    old = os.environ.get("PREFECT_AGENTENV_HOME")
    os.environ["PREFECT_AGENTENV_HOME"] = str(tmp_path_factory.mktemp("agentenv-home"))
    get_settings.cache_clear()
    try:
        with get_artifact_store() as store:
            store.publish_environment("clinic-dataset", "records", "clinic-dataset.json",
                                      EXAMPLES / "artifacts" / "clinic-dataset.json")
        tasks = expand_tasks(load_benchmark(BENCHMARK), BENCHMARK.parent)

        async def run_all() -> dict[str, TaskReport]:
            return {t.task_id: await run_task_document(t.document, execute_in_prefect=False, publish=False)
                    for t in tasks}

        return asyncio.run(run_all())
    finally:
        if old is None:
            os.environ.pop("PREFECT_AGENTENV_HOME", None)
        else:
            os.environ["PREFECT_AGENTENV_HOME"] = old
        get_settings.cache_clear()


def rows(report: TaskReport, verifier: str = "state") -> dict[str, dict[str, Any]]:
    return {r.id: r.model_dump() for r in report.context.metadata.verifications[verifier].results}


def test_the_seed_task_runs_its_file_drop_then_the_agent_and_passes_the_portal_criterion(
        reports: dict[str, TaskReport]) -> None:
    report = reports["submit-prior-auth-for-lumbar-mri"]
    assert report.outcome == "PASSED", report.error
    [row] = rows(report).values()
    assert row["id"] == "prior_auth_submitted_with_correct_cpt" and row["axis"] == "correctness"
    assert [c["path"] for c in row["evidence"]["checks"]] == ["status", "cpt_code"]


def test_voice_transcript_and_fax_content_criteria_score_the_call_log_and_the_fax_queue(
        reports: dict[str, TaskReport]) -> None:
    report = reports["prior-auth-across-phone-portal-and-fax"]
    found = rows(report)
    assert report.outcome == "PASSED", {k: r["justification"] for k, r in found.items()}
    call = found["the_call_named_the_procedure_and_got_a_reference_number"]
    fax = found["the_fax_carries_the_referral_s_diagnosis"]
    assert call["evidence"]["call_id"] == "CALL-0001" and fax["evidence"]["fax_id"] == "FAX-0001"


def test_a_task_without_task_item_runs_the_scenario_and_criteria_without_a_prompt(
        reports: dict[str, TaskReport]) -> None:
    report = reports["the-referral-lands-in-the-inbox"]
    assert report.outcome == "PASSED", {k: r["justification"] for k, r in rows(report).items()}
    assert "prompt" not in {s.id for s in report.steps}
    assert not report.context.prompt_responses
