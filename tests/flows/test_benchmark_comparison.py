"""Real benchmark runs compared pair by pair: the reference email env, the scripted agent that sends
the email and the llm agent on the mock model that does not, over eight seeded task runs.

A rerun of the same setup is tied; the run with the other agent is worse, and the comparison names
the agent and the override that differ; the gate fails that run (flow and command line) and passes
the rerun.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.flows.benchmark import benchmark
from prefect_agentenv.flows.ui.view_data import benchmark_report_files, benchmark_view
from prefect_agentenv.results.store.fingerprint import package_version
from prefect_agentenv.results.store.run_store import list_runs, read_results

pytestmark = pytest.mark.usefixtures("prefect_harness", "agentenv_home")

SLUG = "reply-compare"
SEEDS = 8
PLAN = {"tool_calls": [{"tool": "send", "arguments": {"to": "dana@northwind.example", "subject": "Q3",
                                                      "body": "The Q3 numbers are corrected."}}],
        "reply": "Sent."}
"""The scripted agent's plan: the email the task asks for. The llm agent on the mock model only answers."""


def write_bench(folder: Path) -> Path:
    """One task crossed with eight seeds: the agent must send one email; only the prompt's topic varies,
    so every task run deploys the agent the same way and the warm pool serves them all."""
    steps: list[dict[str, Any]] = [
        {"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": []},
        {"id": "assistant", "type": "deploy_agent", "a2a_agent_id": "scripted", "agent_name": "assistant",
         "env_ids": ["email"], "agent_config": {"plan": PLAN}, "depends_on": ["email"]},
        {"id": "reply", "type": "prompt_agent", "agent_name": "assistant", "prompt_id": "reply",
         "prompt": "Write to Dana about <topic>.", "depends_on": ["assistant"]},
        {"id": "sent", "type": "env_state_verifier", "env_id": "email", "verifier_id": "sent", "depends_on": ["reply"],
         "assertions": [{"assert": "record_count", "id": "sent", "resource": "sent", "equals": 1, "axis": "delivery"}]},
    ]
    path = folder / "bench.yaml"
    path.write_text(yaml.safe_dump({
        "name": "Reply compare", "slug": SLUG, "concurrency": 2, "pool": True, "task_runs_as": "tasks",
        "step_task_runs": False, "seeds": [{"topic": f"topic {i}"} for i in range(SEEDS)],
        "tasks": [{"id": "reply", "tags": ["mail"], "steps": steps}]}))
    return path


async def run(path: Path, **params: Any) -> tuple[Any, dict[str, Any]]:
    state = await benchmark(path=str(path), return_state=True, **params)
    out = await state.aresult(raise_on_failure=False)
    assert isinstance(out, dict), state.message
    return state, out


async def test_a_rerun_is_tied_and_another_agent_is_worse_with_the_setup_difference_named(tmp_path: Path) -> None:
    bench = write_bench(tmp_path)
    state, base = await run(bench)
    assert state.is_completed(), state.message
    assert base["counts"]["passed"] == SEEDS, base["headline"]
    assert base["comparison"] is None and base["gate"] is None  # the first run has no baseline

    state, rerun = await run(bench, fail_on_regression=True)
    assert state.is_completed(), state.message
    comparison = rerun["comparison"]
    assert comparison["previous_run_id"] == base["run_id"] and comparison["pairs"] == SEEDS
    assert comparison["overall"]["verdict"] == "tied" and comparison["setup"]["differences"] == []
    assert rerun["regressions"] == [] and rerun["gate"]["passed"]
    assert rerun["gate"]["reason"].startswith(f"not worse than run {base['run_id']}: all task runs tied")
    assert "Setup: same setup" in rerun["markdown"] and "**Gate passed:**" in rerun["markdown"]

    state, other = await run(bench, overrides={"a2a_agent_id": "llm"}, fail_on_regression=True, fail_under=0.5)
    assert state.is_failed(), "the gate fails the flow run"
    assert state.message.startswith(f"gate failed: mean score 0.000 is under 0.5; worse than run {rerun['run_id']}")
    comparison = other["comparison"]
    overall = comparison["overall"]
    assert overall["verdict"] == "worse" and overall["pass_fail"]["lost"] == SEEDS
    assert overall["pass_fail"]["p_value"] == pytest.approx(2 / 2 ** SEEDS)  # exact McNemar, 8 lost, 0 gained
    assert overall["score"]["difference"] == -1.0 and overall["score"]["interval"]["high"] == -1.0
    assert [(row["kind"], row["name"], row["verdict"]) for row in comparison["by_tag"] + comparison["by_axis"]] == [
        ("tag", "mail", "worse"), ("axis", "delivery", "worse")]
    differences = {d["field"]: (d["previous"], d["current"]) for d in comparison["setup"]["differences"]}
    assert differences["agent assistant"] == ("scripted 1.0.0 on mock", "llm 1.0.0 on mock")
    assert differences["overrides.a2a_agent_id"] == (None, "llm")
    assert "**Setup differs:** agent assistant: scripted 1.0.0 on mock → llm 1.0.0 on mock" in other["markdown"]
    assert not other["gate"]["passed"] and "**Gate failed:**" in other["markdown"]
    # The HTML report lists the paired comparison's regressions and flags the trend's last point; a tied rerun none.
    html = Path(other["report_url"].removeprefix("file://")).read_text()
    assert 'id="regressions"' in html and "all task runs worse: pass rate 100% → 0%" in html
    assert "point mean regression current" in html and "point rate regression current" in html
    assert 'id="regressions"' not in Path(rerun["report_url"].removeprefix("file://")).read_text()

    with get_artifact_store() as store:
        results = read_results(store, SLUG, other["run_id"])
        runs = {entry.run_id: entry for entry in list_runs(store, SLUG)}
    setup = results[0].setup
    assert setup is not None and setup.package_version == package_version() and setup.benchmark == SLUG
    assert [(a.name, a.agent_id, a.version, a.model) for a in setup.agents] == [("assistant", "llm", "1.0.0", "mock")]
    assert setup.overrides == {"a2a_agent_id": "llm"} and setup.models == ["mock"]
    index_setup = runs[base["run_id"]].setup  # the runs index carries each finished run's setup
    assert index_setup is not None and index_setup.agents[0].agent_id == "scripted"
    assert index_setup.documents == SEEDS and index_setup.documents_sha256 == runs[rerun["run_id"]].setup.documents_sha256  # type: ignore[union-attr]
    assert_the_report_streams_a_run_at_a_time(base["run_id"])


def assert_the_report_streams_a_run_at_a_time(run_id: str) -> None:
    """Each run's copied records, then its page (its transcript read for it alone), the index last
    with every run's step durations: a report never holds every transcript at once."""
    with get_artifact_store() as store:
        view = benchmark_view(store, SLUG, run_id)
        assert len(view.rows) == SEEDS and all(row.transcript is None for row in view.rows)
        files = list(benchmark_report_files(store, view))
    names = [rel for rel, _ in files]
    assert names[-1] == "index.html" and len(set(names)) == len(names)
    pages = [i for i, rel in enumerate(names) if rel.startswith("runs/")]
    assert [names[i] for i in pages] == [row.page for row in view.rows]
    for before, at in zip([-1, *pages], pages, strict=False):
        folder = "files/" + names[at].removeprefix("runs/").removesuffix(".html") + "/"
        own = [i for i, rel in enumerate(names) if rel.startswith(folder)]
        assert own and all(before < i < at for i in own), (names[at], own)  # its report.json at least
        page = str(files[at][1])
        assert "Write to Dana about" in page and all(f'href="../{names[i]}"' in page for i in own)
    assert "deploy_env" in str(files[-1][1])  # the duration chart saw every run's steps


# -- the command line, as a pipeline runs it -----------------------------------------------------


@pytest.fixture(scope="module")
def api_url(prefect_harness: None) -> str:
    from prefect.settings import get_current_settings

    url = get_current_settings().api.url
    assert url
    return url


def cli(args: list[str], api_url: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PREFECT_API_URL": api_url, "PREFECT_AGENTENV_HOME": str(home),
           "PREFECT_LOGGING_LEVEL": "WARNING"}
    return subprocess.run([sys.executable, "-m", "prefect_agentenv.cli", *args], env=env, text=True,
                          capture_output=True, timeout=600)


async def test_bench_fails_a_pipeline_with_exit_4_on_a_real_drop_and_passes_a_rerun(
        tmp_path: Path, api_url: str, agentenv_home: Path) -> None:
    bench = write_bench(tmp_path)
    unknown = cli(["bench", str(bench), "--fail-on-regression", "--baseline", "no-such-run"], api_url, agentenv_home)
    assert unknown.returncode == 2 and "error: --baseline: no benchmark run 'no-such-run'" in unknown.stderr
    _, base = await run(bench)

    rerun = cli(["bench", str(bench), "--fail-on-regression", "--baseline", base["run_id"],
                 "--report-dir", str(tmp_path / "rerun")], api_url, agentenv_home)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "gate passed: not worse than run" in rerun.stdout and "Traceback" not in rerun.stderr

    drop = cli(["bench", str(bench), "--override", "a2a_agent_id=llm", "--fail-on-regression", "--fail-under", "0.5",
                "--baseline", f"{SLUG}/{base['run_id']}", "--report-dir", str(tmp_path / "drop")], api_url,
               agentenv_home)
    assert drop.returncode == 4, drop.stdout + drop.stderr
    [line] = [line for line in drop.stderr.splitlines() if line.startswith("gate failed:")]
    assert line.startswith(f"gate failed: mean score 0.000 is under 0.5; worse than run {base['run_id']}: "
                           "all task runs worse: pass rate 100% → 0%")
    assert "setup differs: agent assistant: scripted 1.0.0 on mock → llm 1.0.0 on mock" in line
    summary = json.loads((tmp_path / "drop" / "summary.json").read_text())
    assert summary["gate"]["passed"] is False and summary["comparison"]["overall"]["verdict"] == "worse"

    compared = cli(["compare", base["run_id"], f"{SLUG}/{summary['run_id']}", "--fail-on-regression"], api_url,
                   agentenv_home)
    assert compared.returncode == 4, compared.stdout + compared.stderr
    assert f"# {SLUG}/{summary['run_id']} compared with {SLUG}/{base['run_id']}" in compared.stdout
    assert "| pass rate | 8 | 100% | 0% |" in compared.stdout and "**worse**" in compared.stdout
    as_json = cli(["compare", SLUG, base["run_id"], "--json"], api_url, agentenv_home)  # latest vs the baseline
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["overall"]["verdict"] == "better"
