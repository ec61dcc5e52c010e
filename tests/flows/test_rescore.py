"""Rescoring a benchmark run: the kept submissions restored into fresh envs, scored by edited verifiers.

The records env, the scripted agent and the mock judge run for real on loopback. The benchmark
runs once; its rubric is then edited and the run rescored: no agent process starts, the scores
change, and every scoring version is kept.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest
import yaml
from typer.testing import CliRunner

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.cli import app
from prefect_agentenv.engine.submission_record import read_submission, submission_key
from prefect_agentenv.flows.benchmark import benchmark
from prefect_agentenv.flows.rescore import rescore as rescore_flow
from prefect_agentenv.results.store.run_store import ResultsStore, read_results
from prefect_agentenv.results.store.scoring_store import read_version

pytestmark = pytest.mark.usefixtures("prefect_harness", "agentenv_home")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PLAN = {"tool_calls": [{"tool": "create_request", "arguments": {"patient_id": "P1", "cpt_code": "72148",
                                                               "status": "submitted"}}],
        "files": [{"path": "summary.txt", "content": "REQ-0001 submitted"}],
        "reply": "Submitted {tool_results[0][request_id]}."}
AGENT_MODULE = "prefect_agentenv.agents.scripted"
POLITE = {"id": "polite", "criterion": "The reply is polite."}
PENALTY = {"id": "jargon", "criterion": "The reply uses internal jargon.", "weight": -1.0}


def steps(criteria: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Submit a prior auth, write a file and reply; check the record, the file and the reply."""
    return [
        {"id": "records", "type": "deploy_env", "env_id": "records"},
        {"id": "seed", "type": "load_artifact", "env_id": "records", "artifact_id": "clinic"},
        {"id": "agent", "type": "deploy_agent", "a2a_agent_id": "scripted", "agent_name": "assistant",
         "env_ids": ["records"], "agent_config": {"plan": PLAN}},
        {"id": "ask", "type": "prompt_agent", "agent_name": "assistant", "prompt_id": "ask",
         "prompt": "Submit the prior auth for P1."},
        {"id": "state", "type": "env_state_verifier", "env_id": "records", "assertions": [
            {"assert": "record-count", "id": "submitted", "resource": "requests",
             "where": {"status": "submitted", "cpt_code": "72148"}, "equals": 1}]},
        {"id": "files", "type": "verify_sandbox", "agent_name": "assistant", "checks": [
            {"id": "summary", "kind": "file_contains", "path": "summary.txt", "text": "REQ-0001 submitted"}]},
        {"id": "tone", "type": "rubrics_verifier", "prompt_id": "ask", "verifier_id": "tone", "judge_mode": "model",
         "score_aggregator": "weighted_average", "criteria": criteria},
    ]


def write_bench(folder: Path, criteria: list[dict[str, Any]]) -> Path:
    tasks = [{"id": "shared", "steps": steps(criteria)},
             {"id": "isolated", "steps": steps(criteria), "scoring": {"mode": "isolated"}}]
    path = folder / "bench.yaml"
    path.write_text(yaml.safe_dump({"name": "Rescore bench", "slug": "rescore-bench", "concurrency": 1,
                                    "tasks": tasks}))
    return path


def parent_of(pid: int) -> int:
    return int((Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[1])


def started_here(pid: int) -> bool:
    """Whether ``pid`` descends from this test process (the machine may run other tests' agents)."""
    while pid > 1:
        if pid == os.getpid():
            return True
        pid = parent_of(pid)
    return False


class AgentWatch:
    """Every process of the graded agent this test started, seen while it watches (/proc, every 20 ms)."""

    def __init__(self) -> None:
        self.seen: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> AgentWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _poll(self) -> None:
        needle = AGENT_MODULE.encode()
        while not self._stop.wait(0.02):
            for entry in Path("/proc").iterdir():
                try:
                    if entry.name.isdigit() and needle in (entry / "cmdline").read_bytes() \
                            and started_here(int(entry.name)):
                        self.seen.add(int(entry.name))
                except OSError:
                    continue


@pytest.fixture
def published(agentenv_home: Path) -> None:
    with get_artifact_store() as store:
        store.publish_environment("clinic", "records", "clinic.json", EXAMPLES / "artifacts" / "clinic.json")


def rescore(*args: str) -> tuple[int, dict[str, Any]]:
    done = CliRunner().invoke(app, ["rescore", *args, "--json"])
    assert done.exit_code in (0, 1), done.output
    return done.exit_code, json.loads(done.stdout)


@pytest.mark.usefixtures("published")
def test_a_rubric_edited_after_the_run_is_rescored_without_starting_an_agent(tmp_path: Path) -> None:
    path = write_bench(tmp_path, [POLITE])
    with AgentWatch() as during_run:
        state = asyncio.run(benchmark(path=str(path), return_state=True))
    assert state.is_completed(), state.message
    run_id = str(state.state_details.flow_run_id)
    assert during_run.seen, "the watch must see the agent when it does run"
    with get_artifact_store() as store:
        own = read_results(store, "rescore-bench", run_id)
        assert sorted((r.task_id, r.score) for r in own) == [("isolated", 1.0), ("shared", 1.0)]
        kept = {r.task_id: read_submission(store, r.flow_run_id or "") for r in own}
    assert {t: k.scoring_mode for t, k in kept.items()} == {"isolated": "isolated", "shared": "shared"}
    for record in kept.values():  # the env's state, the agent's file and its reply, as the run left them
        assert record.submission().files["assistant"]["summary.txt"] == b"REQ-0001 submitted"
        assert any(r.get("status") == "submitted" for r in record.states["records"]["requests"])
        assert record.context.prompt_responses["ask"].response.startswith("Submitted REQ-")

    write_bench(tmp_path, [POLITE, PENALTY])  # the rubric now penalises what the judge finds
    with AgentWatch() as during_rescore:
        code, same = rescore(f"rescore-bench/{run_id}")
        code_edited, edited = rescore(f"rescore-bench/{run_id}", "--benchmark", str(path))
    assert not during_rescore.seen, "rescoring started the graded agent"
    assert (code, code_edited) == (0, 0)
    assert same["version"] == 2 and same["documents"] == "frozen"
    assert sorted((r["task_id"], r["before"], r["after"]) for r in same["rescored"]) == [
        ("isolated", 1.0, 1.0), ("shared", 1.0, 1.0)]
    assert edited["version"] == 3 and edited["shown"] == 3 and edited["documents"] == "benchmark"
    after = {r["task_id"]: r["after"] for r in edited["rescored"]}
    assert set(after) == {"isolated", "shared"} and all(score < 1.0 for score in after.values()), after

    compared = CliRunner().invoke(app, ["compare", f"rescore-bench/{run_id}", f"rescore-bench/{run_id}"])
    assert compared.exit_code == 0 and f"rescore-bench/{run_id}: scoring version 3" in compared.stdout, compared.output
    with get_artifact_store() as store:
        entry = ResultsStore(store, "rescore-bench", run_id).own_entry()
        assert entry is not None and entry.shown_scoring == 3
        assert [(v.number, v.documents) for v in entry.scorings] == [(1, "run"), (2, "frozen"), (3, "benchmark")]
        assert [r.score for r in read_version(store, "rescore-bench", run_id, 1)] == [1.0, 1.0]  # kept
        shown = read_version(store, "rescore-bench", run_id)
        assert sorted((r.task_id, r.score) for r in shown) == sorted(after.items())
        report = json.loads(Path(unquote(urlparse(shown[0].report_url or "").path)).read_text())
        assert sorted(s["type"] for s in report["steps"]) == [  # the verifiers ran, nothing else
            "env_state_verifier", "rubrics_verifier", "verify_sandbox"]
        assert report["context"]["metadata"]["verifications"]["tone"]["score"] < 1.0
        lost = next(r for r in own if r.task_id == "shared")
        Path(unquote(urlparse(store.object_url(submission_key(lost.flow_run_id or ""))).path)).unlink()

    state = asyncio.run(rescore_flow(run=f"rescore-bench/{run_id}", return_state=True))  # as the UI runs it
    partial = state.result(raise_on_failure=False)
    assert state.is_completed() and "1 task run(s) not rescored" in (state.message or ""), state.message
    assert partial["version"] == 4 and [r["task_id"] for r in partial["rescored"]] == ["isolated"]
    assert len(partial["missing"]) == 1 and "shared" in partial["missing"][0] and "no submission" in partial["missing"][0]
    code, _ = rescore(f"rescore-bench/{run_id}")
    assert code == 1  # a task run that could not be rescored: exit 1, its previous result kept in version 5
    with get_artifact_store() as store:
        kept = {r.task_id: r.score for r in read_version(store, "rescore-bench", run_id, 5)}
    assert kept["shared"] == after["shared"]

    task = tmp_path / "isolated.json"  # one task document with the edited rubric (versions 4, 5: the frozen one)
    task.write_text(json.dumps({"id": "isolated", "steps": steps([POLITE, PENALTY]), "scoring": {"mode": "isolated"}}))
    code, one_task = rescore(f"rescore-bench/{run_id}", "--task", str(task))
    assert code == 0 and one_task["version"] == 6 and one_task["documents"] == "task"
    assert [(r["task_id"], r["before"], r["after"]) for r in one_task["rescored"]] == [
        ("isolated", 1.0, after["isolated"])]

    # Resumed after its rescores (nothing left to run): it shows its own scoring again, rescores kept.
    state = asyncio.run(benchmark(path=str(path), run_id=run_id, return_state=True))
    assert state.is_completed(), state.message
    with get_artifact_store() as store:
        entry = ResultsStore(store, "rescore-bench", run_id).own_entry()
        assert entry is not None and entry.shown_scoring is None and len(entry.scorings) == 6
        assert entry.headline is not None and entry.headline.mean_score == 1.0
        assert sorted(r.score for r in read_version(store, "rescore-bench", run_id)) == [1.0, 1.0]


def test_a_run_that_is_not_in_the_store_or_two_sources_of_documents_exit_2(tmp_path: Path) -> None:
    missing = CliRunner().invoke(app, ["rescore", "no-such-bench/no-such-run"])
    assert missing.exit_code == 2 and "no run 'no-such-run'" in missing.stderr, missing.output
    both = CliRunner().invoke(app, ["rescore", "x", "--task", "a.json", "--benchmark", "b.yaml"])
    assert both.exit_code == 2 and "not both" in both.stderr, both.output
    (tmp_path / "bad.json").write_text(json.dumps({"id": "bad", "steps": [{"id": "s", "type": "no_such_step"}]}))
    invalid = CliRunner().invoke(app, ["rescore", "x", "--task", str(tmp_path / "bad.json")])
    assert invalid.exit_code == 2 and "no_such_step" in invalid.stderr and "Traceback" not in invalid.output
