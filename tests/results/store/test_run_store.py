"""The benchmark results store, run over both artifact backends: a local folder and S3 (moto's server)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

# The S3 fixtures of the artifact store suite: one moto server per module, a fresh prefix per store.
from artifacts.conftest import make_s3_store, moto_endpoint, s3_client, s3_store_client  # noqa: F401
from prefect_agentenv.artifacts import (
    ArtifactBackend,
    ArtifactConflictError,
    ArtifactIntegrityError,
    ArtifactNotFoundError,
    LocalArtifactBackend,
    UnsafeKeyError,
)
from prefect_agentenv.grading.outcome import Outcome
from prefect_agentenv.results import FailureCause, RunKey, TaskResult, summarize
from prefect_agentenv.results.store.fingerprint import benchmark_setup, package_version, setup_from_report
from prefect_agentenv.results.store.run_lookup import find_run
from prefect_agentenv.results.store.run_store import (
    ResultsStore,
    canonical_json,
    crashed_result,
    list_runs,
    pending_keys,
    read_results,
    rebuild_runs_index,
    result_from_report,
    task_key,
)
from prefect_agentenv.results.task_report import TaskReport

SLUG = "prior-auth"


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ArtifactBackend]:
    """The same results contract, over each backend."""
    if request.param == "local":
        backend: ArtifactBackend = LocalArtifactBackend(tmp_path / "store")
    else:
        backend = make_s3_store(request.getfixturevalue("moto_endpoint"),
                                client=request.getfixturevalue("s3_store_client"))
    with backend:
        yield backend


def result(task_id: str, outcome: str = "PASSED", *, epoch: int = 0, seed_index: int = 0,
           status: str | None = None) -> TaskResult:
    errored = outcome in ("FAILED", "TIMED_OUT")
    score = {"PASSED": 1.0, "BELOW_ONE": 0.5, "UNSCORED": None}.get(outcome, 0.0)
    return TaskResult(task_id=task_id, epoch=epoch, seed_index=seed_index, outcome=Outcome(outcome), score=score,
                      status=status or ("failed" if errored else "completed"))


# -- results ------------------------------------------------------------------------------------


def test_appended_results_are_read_back_in_order_as_one_json_line_each(store: ArtifactBackend) -> None:
    run = ResultsStore(store, SLUG, "run-1")
    first, second = result("a"), result("b", "BELOW_ONE", epoch=1)

    url = run.append(first)
    run.append(second)

    assert url == run.results_url
    assert run.read_results() == [first, second]
    lines = store.get_object(f"benchmarks/{SLUG}/run-1/results.jsonl").decode().splitlines()
    assert [json.loads(line)["task_id"] for line in lines] == ["a", "b"]


def test_a_run_without_results_reads_as_empty(store: ArtifactBackend) -> None:
    assert read_results(store, SLUG, "never-ran") == []


async def test_concurrent_appends_from_one_process_keep_every_result(store: ArtifactBackend) -> None:
    run = ResultsStore(store, SLUG, "run-1")
    results = [result(f"task-{i}", epoch=i % 3) for i in range(12)]

    await asyncio.gather(*(run.append_async(r) for r in results))

    assert sorted(r.task_id for r in run.read_results()) == sorted(r.task_id for r in results)


def test_appends_from_several_threads_keep_every_result(tmp_path: Path) -> None:
    run = ResultsStore(LocalArtifactBackend(tmp_path / "store"), SLUG, "run-1")
    threads = [threading.Thread(target=run.append, args=(result(f"task-{i}"),)) for i in range(16)]

    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(run.read_results()) == 16


def test_an_append_after_a_line_torn_by_a_crash_drops_the_torn_line(tmp_path: Path) -> None:
    """A local append writes in place; a crash mid-append leaves half a line, which the next append drops."""
    store = LocalArtifactBackend(tmp_path / "store")
    run = ResultsStore(store, SLUG, "run-1")
    run.append(result("a"))
    file = tmp_path / "store" / "runs" / f"benchmarks/{SLUG}/run-1/results.jsonl"
    before = file.stat().st_ino
    with file.open("ab") as handle:
        handle.write(result("b").model_dump_json().encode()[:20])

    run.append(result("c"))

    assert [r.task_id for r in run.read_results()] == ["a", "c"]
    assert file.stat().st_ino == before  # appended in place, not rewritten


def test_an_append_keeps_a_last_line_written_without_its_newline(store: ArtifactBackend) -> None:
    run = ResultsStore(store, SLUG, "run-1")
    store.put_object(run.results_key, result("a").model_dump_json())

    run.append(result("b"))

    assert [r.task_id for r in run.read_results()] == ["a", "b"]


def test_a_result_line_that_is_not_a_result_is_reported_with_its_line_number(store: ArtifactBackend) -> None:
    run = ResultsStore(store, SLUG, "run-1")
    run.append(result("a"))
    store.put_object(run.results_key, store.get_object(run.results_key) + b'{"task_id": "b"}\n')

    with pytest.raises(ArtifactIntegrityError, match="line 2"):
        run.read_results()


def test_slugs_and_run_ids_that_would_leave_the_store_are_refused(store: ArtifactBackend) -> None:
    with pytest.raises(UnsafeKeyError):
        ResultsStore(store, "../other", "run-1")
    with pytest.raises(UnsafeKeyError):
        ResultsStore(store, SLUG, "a/b")


# -- snapshots ----------------------------------------------------------------------------------


def test_a_snapshot_is_stored_as_canonical_json_under_its_content_hash(store: ArtifactBackend) -> None:
    run = ResultsStore(store, SLUG, "run-1")
    document = {"id": "fax-1", "steps": [{"id": "deploy", "type": "deploy_env"}], "é": "ü"}

    snapshot = run.snapshot_task(task_key("fax-1"), document)

    stored = store.get_object(f"benchmarks/{SLUG}/run-1/tasks/fax-1.seed0.json")
    assert stored == canonical_json(document)
    assert snapshot.sha256 == hashlib.sha256(stored).hexdigest()
    assert snapshot.url == store.object_url(f"benchmarks/{SLUG}/run-1/tasks/fax-1.seed0.json")
    assert run.read_snapshot(task_key("fax-1"), snapshot.sha256) == document


def test_the_snapshot_hash_does_not_depend_on_key_order(store: ArtifactBackend) -> None:
    one = ResultsStore(store, SLUG, "run-1").snapshot_task("t", {"a": 1, "b": [1, 2]})
    two = ResultsStore(store, SLUG, "run-2").snapshot_task("t", {"b": [1, 2], "a": 1})
    assert one.sha256 == two.sha256


def test_snapshotting_the_same_document_again_is_a_no_op_and_an_edited_one_is_refused(store: ArtifactBackend) -> None:
    run = ResultsStore(store, SLUG, "run-1")
    first = run.snapshot_task("t", {"instruction": "fax the referral"})

    assert run.snapshot_task("t", {"instruction": "fax the referral"}) == first
    with pytest.raises(ArtifactConflictError, match="frozen snapshot"):
        run.snapshot_task("t", {"instruction": "email the referral"})


def test_a_snapshot_that_does_not_match_its_hash_is_refused(store: ArtifactBackend) -> None:
    run = ResultsStore(store, SLUG, "run-1")
    snapshot = run.snapshot_task("t", {"instruction": "fax the referral"})
    store.put_object(run.snapshot_key("t"), b'{"instruction":"something else"}')

    with pytest.raises(ArtifactIntegrityError):
        run.read_snapshot("t", snapshot.sha256)


def test_task_keys_are_store_safe_and_distinct_for_ids_that_clean_up_alike() -> None:
    assert task_key("fax-1", 2) == "fax-1.seed2"
    odd_one, odd_two = task_key("Fax #1 / urgent"), task_key("Fax #1 ? urgent")
    assert odd_one != odd_two
    assert all(c.isalnum() or c in "._-" for c in odd_one + odd_two)


# -- runs index ---------------------------------------------------------------------------------


def finish(store: ArtifactBackend, run_id: str, started_at: str, finished_at: str | None) -> ResultsStore:
    run = ResultsStore(store, SLUG, run_id)
    run.record_started(started_at)
    run.append(result("a"))
    if finished_at:
        run.record_finished(summarize(run.read_results()), finished_at)
    return run


def test_the_previous_run_is_the_latest_finished_run_started_before(store: ArtifactBackend) -> None:
    finish(store, "r1", "2025-01-01T00:00:00+00:00", "2025-01-01T01:00:00+00:00")
    finish(store, "r2", "2025-01-02T00:00:00+00:00", "2025-01-02T01:00:00+00:00")
    finish(store, "r3", "2025-01-03T00:00:00+00:00", None)  # crashed: never a baseline
    current = finish(store, "r4", "2025-01-04T00:00:00+00:00", None)

    previous = current.previous_run()
    assert previous is not None and previous.run_id == "r2"
    assert previous.headline is not None and previous.headline.mean_score == 1.0
    assert ResultsStore(store, SLUG, "r2").previous_run().run_id == "r1"  # type: ignore[union-attr]
    assert ResultsStore(store, SLUG, "r1").previous_run() is None
    assert [r.run_id for r in list_runs(store, SLUG)] == ["r1", "r2", "r3", "r4"]


def test_a_benchmark_that_never_ran_has_no_runs_and_no_previous_run(store: ArtifactBackend) -> None:
    assert list_runs(store, SLUG) == []
    assert ResultsStore(store, SLUG, "r1").previous_run() is None


def test_a_resumed_run_keeps_its_start_and_is_open_until_it_finishes_again(store: ArtifactBackend) -> None:
    run = finish(store, "r1", "2025-01-01T00:00:00+00:00", "2025-01-01T01:00:00+00:00")

    reopened = run.record_started("2025-01-05T00:00:00+00:00")

    assert reopened.started_at == "2025-01-01T00:00:00+00:00"
    assert reopened.finished_at is None and list_runs(store, SLUG)[0].finished_at is None


def test_a_lost_index_is_rebuilt_from_the_runs_own_entries(store: ArtifactBackend) -> None:
    finish(store, "r2", "2025-01-02T00:00:00+00:00", "2025-01-02T01:00:00+00:00")
    finish(store, "r1", "2025-01-01T00:00:00+00:00", "2025-01-01T01:00:00+00:00")
    store.put_object(f"benchmarks/{SLUG}/runs.json", b'{"runs": []}')

    rebuilt = rebuild_runs_index(store, SLUG)

    assert [r.run_id for r in rebuilt] == ["r1", "r2"]
    assert [r.run_id for r in list_runs(store, SLUG)] == ["r1", "r2"]


# -- resume -------------------------------------------------------------------------------------


def test_resume_reruns_missing_and_errored_keys_and_keeps_completed_ones() -> None:
    keys = [RunKey("passed"), RunKey("below"), RunKey("unscored"), RunKey("failed"), RunKey("timed-out"),
            RunKey("crashed"), RunKey("missing"), RunKey("passed", epoch=1)]
    existing = [result("passed"), result("below", "BELOW_ONE"), result("unscored", "UNSCORED"),
                result("failed", "FAILED"), result("timed-out", "TIMED_OUT"),
                crashed_result(RunKey("crashed"), "flow run crashed")]

    assert pending_keys(keys, existing) == [RunKey("failed"), RunKey("timed-out"), RunKey("crashed"),
                                            RunKey("missing"), RunKey("passed", epoch=1)]


def test_resume_reruns_a_completed_run_that_failed_for_infrastructure_but_not_one_the_agent_failed() -> None:
    verifier = FailureCause(kind="infrastructure", reason="verifier_failed", retryable=True, step_id="judge")
    wrong = FailureCause(kind="agent", reason="below_one")
    existing = [result("judged").model_copy(update={"outcome": Outcome.BELOW_ONE, "score": 0.5, "failure": verifier}),
                result("wrong", "BELOW_ONE").model_copy(update={"failure": wrong})]
    assert pending_keys([RunKey("judged"), RunKey("wrong")], existing) == [RunKey("judged")]


def test_a_key_whose_rerun_completed_is_no_longer_pending() -> None:
    existing = [result("a", "FAILED"), result("a", "PASSED")]
    assert pending_keys([RunKey("a")], existing) == []


def test_resume_reads_the_runs_stored_results(store: ArtifactBackend) -> None:
    run = ResultsStore(store, SLUG, "run-1")
    run.append(result("a", epoch=0))
    run.append(result("a", "TIMED_OUT", epoch=1))

    every_key = [RunKey("a", 0, 0), RunKey("a", 0, 1), RunKey("a", 1, 0)]
    assert run.pending(every_key) == [RunKey("a", 0, 1), RunKey("a", 1, 0)]


# -- results from reports -----------------------------------------------------------------------


def test_a_result_built_from_a_report_carries_axes_files_and_links() -> None:
    report = TaskReport(
        task_id="fax-1", flow_run_id="f-1", status="completed", outcome=Outcome.BELOW_ONE, score=0.5,
        started_at="2025-01-01T00:00:00+00:00", duration_s=3.5, steps=[],
        context={"metadata": {
            "verifications": {"state": {"score": 0.5, "results": [
                {"id": "a", "result": "pass", "score": 1.0, "axis": "correctness"},
                {"id": "b", "result": "fail", "score": 0.0, "axis": "correctness"}]}},
            "collected_artifacts": {"collect": {"artifacts": {"out.pdf": "s3://b/out.pdf"}}},
        }},
    )

    built = result_from_report(report, RunKey("fax-1", 1, 2), seed={"patient": "p1"}, tags=["fax"],
                               report_url="s3://b/runs/fax-1/report.json")

    assert built.run_key == RunKey("fax-1", 1, 2)
    assert (built.outcome, built.score, built.status, built.flow_run_id) == (Outcome.BELOW_ONE, 0.5, "completed", "f-1")
    assert built.axis_scores == {"correctness": 0.5}
    assert built.files == {"out.pdf": "s3://b/out.pdf"}
    assert built.seed == {"patient": "p1"} and built.tags == ["fax"]
    assert built.report_url == "s3://b/runs/fax-1/report.json" and built.finished_at


def test_a_crashed_run_counts_as_failed_with_score_zero() -> None:
    crashed = crashed_result(RunKey("a"), "flow run crashed")
    assert (crashed.status, crashed.outcome, crashed.score, crashed.errored) == ("crashed", Outcome.FAILED, 0.0, True)


# -- setups -------------------------------------------------------------------------------------


def test_a_result_records_the_agents_models_judges_and_overrides_its_report_shows() -> None:
    report = TaskReport(
        task_id="reply", flow_run_id="f-2", status="completed", outcome=Outcome.PASSED, score=1.0,
        started_at="2025-01-01T00:00:00+00:00", duration_s=2.0, steps=[],
        context={"deployed_agents": {"assistant": {"agent_name": "assistant", "a2a_url": "http://127.0.0.1:1",
                                                   "instance_id": "assistant-1", "a2a_agent_id": "llm",
                                                   "model": "gpt-4.1", "version": "2.3.0"}},
                 "prompt_responses": {"reply": {"prompt_id": "reply", "prompt": "Hi", "model": "gpt-4.1-2025"}},
                 "metadata": {"verifications": {"tone": {"score": 1.0, "judge": {"mode": "model", "model": "mock",
                                                                                "mock": True}}}}},
    )
    base = benchmark_setup(benchmark="mail", benchmark_version="3",
                           overrides={"a2a_agent_id": "llm", "agent_config": '{"token": "s3cr3t-value"}'})

    built = result_from_report(report, RunKey("reply"), setup=setup_from_report(report, base))

    setup = built.setup
    assert setup is not None and (setup.benchmark, setup.benchmark_version) == ("mail", "3")
    assert setup.package_version == package_version()
    assert [(a.name, a.agent_id, a.version, a.model) for a in setup.agents] == [("assistant", "llm", "2.3.0", "gpt-4.1")]
    assert setup.models == ["gpt-4.1-2025"] and setup.judge_models == ["mock"]
    assert setup.overrides["a2a_agent_id"] == "llm" and setup.overrides["agent_config"].startswith("sha256:")
    assert "s3cr3t-value" not in built.model_dump_json()
    assert crashed_result(RunKey("reply"), "gone", setup=base).setup == base  # no report: the benchmark's part


def test_results_and_index_entries_written_before_setups_existed_still_read(store: ArtifactBackend) -> None:
    old_line = {"task_id": "a", "status": "completed", "outcome": "PASSED", "score": 1.0, "run_key": ["a", 0, 0]}
    store.put_object(f"benchmarks/{SLUG}/old/results.jsonl", json.dumps(old_line) + "\n")
    store.put_object(f"benchmarks/{SLUG}/runs.json", json.dumps({"runs": [
        {"run_id": "old", "started_at": "2025-01-01T00:00:00+00:00", "finished_at": "2025-01-01T00:05:00+00:00"}]}))
    [old] = read_results(store, SLUG, "old")
    [entry] = list_runs(store, SLUG)
    assert old.setup is None and entry.setup is None and summarize([old]).setup is None


def test_a_finished_run_enters_its_setup_in_the_runs_index(store: ArtifactBackend) -> None:
    run = ResultsStore(store, SLUG, "r1")
    run.record_started()
    setup = benchmark_setup(benchmark=SLUG, benchmark_version="1", overrides={"model": "gpt-4.1"})
    results = [result("a").model_copy(update={"setup": setup})]
    run.record_finished(summarize(results))
    [entry] = list_runs(store, SLUG)
    assert entry.setup is not None and entry.setup.overrides == {"model": "gpt-4.1"}
    run.record_started()  # resumed: open again, its setup to be summarised anew
    assert list_runs(store, SLUG)[0].setup is None


def test_runs_are_found_by_slug_and_id_by_slug_alone_or_by_id_alone(store: ArtifactBackend) -> None:
    for slug, run_id, day in ((SLUG, "r1", 1), (SLUG, "r2", 2), ("other", "r3", 3), ("other", "r1", 4)):
        run = ResultsStore(store, slug, run_id)
        run.record_started(started_at=f"2025-01-0{day}T00:00:00+00:00")
        run.append(result("a"))
        run.record_finished(summarize([result("a")]), finished_at=f"2025-01-0{day}T00:05:00+00:00")
    assert find_run(store, f"{SLUG}/r1")[:2] == (SLUG, "r1")
    assert find_run(store, SLUG)[:2] == (SLUG, "r2")  # the latest finished run
    assert find_run(store, "r3")[:2] == ("other", "r3")
    assert find_run(store, "r1", slug=SLUG)[:2] == (SLUG, "r1")  # the benchmark's own run first
    with pytest.raises(ArtifactNotFoundError, match="several benchmarks"):
        find_run(store, "r1")
    with pytest.raises(ArtifactNotFoundError, match="no benchmark run 'nope'"):
        find_run(store, "nope")
    with pytest.raises(ArtifactNotFoundError, match=f"benchmark '{SLUG}' has no run 'nope'"):
        find_run(store, f"{SLUG}/nope")
    with pytest.raises(ArtifactNotFoundError, match="names no benchmark run"):
        find_run(store, "../x")
