"""A sweep of two agents in one real benchmark run: the reference email env, the scripted agent
that sends the email and the llm agent on the mock model that does not, over six seeded task runs
per cell.

Each cell gets its own results, summary and gate; the two cells pair exactly (same tasks, seeds,
epochs), so the llm cell is worse by McNemar's test; a resume runs only a cell's missing task
runs; the command line takes ``--matrix``, prints the cells and compares each with the same cell
of the baseline run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.flows.benchmark import benchmark
from prefect_agentenv.flows.rescoring import load_documents, rescore_run
from prefect_agentenv.results.store.run_store import RESULTS_FILE, list_runs, read_results, run_folder
from prefect_agentenv.results.store.scoring_store import read_version
from tests.flows.test_benchmark_comparison import cli, run, write_bench
from tests.flows.test_benchmark_flow import wait_for_event

pytestmark = pytest.mark.usefixtures("prefect_harness", "agentenv_home")

SLUG = "reply-sweep"
SEEDS = 6
"""Six lost pairs of six: McNemar's exact p = 2/2**6 < 0.05."""
SCRIPTED, LLM = "a2a_agent_id=scripted", "a2a_agent_id=llm"


@pytest.fixture(scope="module")
def api_url(prefect_harness: None) -> str:
    from prefect.settings import get_current_settings

    url = get_current_settings().api.url
    assert url
    return url


def write_sweep(folder: Path, matrix: dict[str, list[str]] | None = None) -> Path:
    """The comparison tests' benchmark, with six seeds, its own slug and (optionally) a matrix block."""
    path = write_bench(folder)
    data = yaml.safe_load(path.read_text())
    data.update(slug=SLUG, seeds=data["seeds"][:SEEDS])
    if matrix:
        data["matrix"] = matrix
    path.write_text(yaml.safe_dump(data))
    return path


async def test_a_sweep_of_two_agents_summarizes_gates_and_compares_each_cell(tmp_path: Path) -> None:
    bench = write_sweep(tmp_path, {"a2a_agent_id": ["scripted", "llm"]})
    state, out = await run(bench, fail_under=0.5)
    assert state.is_failed() and state.message.startswith(f"gate failed: cell {LLM}: mean score 0.000 is under 0.5")
    sweep = out["sweep"]
    cells = {c["cell"]: c for c in sweep["cells"]}
    assert list(cells) == [SCRIPTED, LLM] and sweep["axes"] == {"a2a_agent_id": ["scripted", "llm"]}
    assert cells[SCRIPTED]["summary"]["mean_score"] == 1.0 and cells[SCRIPTED]["gate"]["passed"]
    assert cells[LLM]["summary"]["mean_score"] == 0.0 and not cells[LLM]["gate"]["passed"]
    assert cells[LLM]["summary"]["counts"]["below_one"] == SEEDS and cells[LLM]["summary"]["pass_at_k"] == 0.0
    [pair] = sweep["pairwise"]
    assert (pair["baseline"], pair["other"], pair["pairs"]) == (SCRIPTED, LLM, SEEDS)
    assert pair["overall"]["verdict"] == "worse" and pair["overall"]["pass_fail"]["lost"] == SEEDS
    assert pair["overall"]["pass_fail"]["p_value"] == pytest.approx(2 / 2 ** SEEDS)
    assert out["counts"]["total"] == 2 * SEEDS and out["comparison"] is None  # the first run: no baseline
    assert "## Sweep" in out["markdown"] and "### Cells compared pair by pair" in out["markdown"]
    assert f"| {SCRIPTED} | {LLM} | {SEEDS} | 100% → 0% |" in out["markdown"]
    index = Path(out["report_url"].removeprefix("file://"))  # the HTML report: the cells, the pairs, a trend each
    html = index.read_text()
    assert 'id="cells"' in html and 'id="cell-pairs"' in html and html.count('class="trend-cell"') == 2
    assert '<td class="verdict v-worse">worse</td>' in html
    assert len(list((index.parent / "runs").glob("*.html"))) == 2 * SEEDS  # a page per task run of each cell

    with get_artifact_store() as store:
        results = read_results(store, SLUG, out["run_id"])
        [entry] = [e for e in list_runs(store, SLUG) if e.run_id == out["run_id"]]
    assert sorted({r.cell for r in results} - {None}) == sorted([SCRIPTED, LLM]) and len(results) == 2 * SEEDS
    for r in results:  # each result records its cell and the overrides that made it
        assert r.setup is not None and r.setup.overrides == {"a2a_agent_id": r.cell.split("=")[1]}  # type: ignore[union-attr]
        assert r.setup.agents[0].agent_id == r.cell.split("=")[1]  # type: ignore[union-attr]
    assert entry.cells == [SCRIPTED, LLM] and entry.finished_at is not None

    # Rescored from the kept submissions: each cell keeps its own scores and its own report.
    with get_artifact_store() as store:
        rescored = await rescore_run(store, f"{SLUG}/{out['run_id']}", load_documents(None, None))
        again = read_version(store, SLUG, out["run_id"])
    assert not rescored.missing and len(rescored.rescored) == 2 * SEEDS
    assert {(r.cell, r.after) for r in rescored.rescored} == {(SCRIPTED, 1.0), (LLM, 0.0)}
    assert sorted((r.cell, r.seed_index) for r in again) == sorted((r.cell, r.seed_index) for r in results)
    assert len({r.report_url for r in again}) == 2 * SEEDS  # no cell's report written over another's
    assert "(a2a_agent_id=llm) | 0 | 0 | 0.000 | 0.000 |" in rescored.markdown()


async def test_a_sweep_resumes_cell_by_cell_and_refuses_another_matrix(tmp_path: Path) -> None:
    bench = write_sweep(tmp_path, {"a2a_agent_id": ["scripted", "llm"]})
    _, first = await run(bench)
    key = f"{run_folder(SLUG, first['run_id'])}/{RESULTS_FILE}"
    with get_artifact_store() as store:  # the llm cell's results lost, as if the run had stopped halfway
        kept = [line for line in store.get_object(key).decode().splitlines() if f'"cell":"{LLM}"' not in line]
        assert len(kept) == SEEDS
        store.put_object(key, ("\n".join(kept) + "\n").encode())
    state, resumed = await run(bench, run_id=first["run_id"])
    assert state.is_completed(), state.message
    with get_artifact_store() as store:
        results = read_results(store, SLUG, first["run_id"])
    assert [r.cell for r in results[SEEDS:]] == [LLM] * SEEDS  # only the missing cell ran again
    assert resumed["sweep"]["pairwise"][0]["overall"]["verdict"] == "worse"

    state = await benchmark(path=str(bench), run_id=first["run_id"], matrix={"a2a_agent_id": ["scripted"]},
                            return_state=True)
    assert state.is_failed() and "started with the cells" in state.message


async def test_bench_sweeps_from_the_command_line_and_gates_each_cell_against_the_baseline(
        tmp_path: Path, api_url: str, agentenv_home: Path) -> None:
    bench = write_sweep(tmp_path)
    typo = cli(["bench", str(bench), "--matrix", "a2a_agent=scripted,llm"], api_url, agentenv_home)
    assert typo.returncode == 2 and "did you mean 'a2a_agent_id'?" in typo.stderr, typo.stderr
    twice = cli(["bench", str(bench), "--matrix", "a2a_agent_id=llm,llm"], api_url, agentenv_home)
    assert twice.returncode == 2 and "'llm' given more than once" in twice.stderr, twice.stderr
    _, base = await run(bench)  # no sweep: the scripted agent alone

    # Each cell paired with the whole baseline run (it was no sweep): scripted ties, llm is worse.
    swept = cli(["bench", str(bench), "--matrix", "a2a_agent_id=scripted,llm", "--fail-on-regression",
                 "--report-dir", str(tmp_path / "swept")], api_url, agentenv_home)
    assert swept.returncode == 4, swept.stdout + swept.stderr
    assert "sweep over a2a_agent_id: cells" in swept.stdout and "cells compared pair by pair" in swept.stdout
    [line] = [line for line in swept.stderr.splitlines() if line.startswith("gate failed:")]
    assert line.startswith(f"gate failed: cell {LLM}: worse than run {base['run_id']}: all task runs worse")
    summary = json.loads((tmp_path / "swept" / "summary.json").read_text())
    cells = {c["cell"]: c for c in summary["sweep"]["cells"]}
    assert cells[SCRIPTED]["comparison"]["overall"]["verdict"] == "tied" and cells[SCRIPTED]["gate"]["passed"]
    assert cells[LLM]["comparison"]["overall"]["verdict"] == "worse" and cells[LLM]["comparison"]["pairs"] == SEEDS
    assert summary["regressions"][0].startswith(f"cell {LLM}: all task runs worse")
    event = await wait_for_event("prefect-agentenv.benchmark.regressed", summary["run_id"])
    assert event.payload["cell"] == LLM and event.payload["score"] == 0.0 and event.payload["previous_score"] == 1.0
    reports = sorted(p.name for p in (tmp_path / "swept").glob("*.json") if p.name != "summary.json")
    assert len(reports) == 2 * SEEDS and len({name.split(".cell-")[1] for name in reports}) == 2

    # Against the previous run, now a sweep of the same cells: each cell pairs with its namesake and ties.
    again = cli(["bench", str(bench), "--matrix", "a2a_agent_id=scripted,llm", "--fail-on-regression",
                 "--report-dir", str(tmp_path / "again")], api_url, agentenv_home)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"gate passed: cell {SCRIPTED}: not worse than run {summary['run_id']} · {SCRIPTED}" in again.stdout
    cells = {c["cell"]: c for c in json.loads((tmp_path / "again" / "summary.json").read_text())["sweep"]["cells"]}
    assert [(c["comparison"]["pairs"], c["comparison"]["overall"]["verdict"]) for c in cells.values()] == [
        (SEEDS, "tied"), (SEEDS, "tied")]
    # Each cell's trend: the two sweeps (the baseline ran no cell); the llm cell's first point is ringed.
    html = (tmp_path / "again" / "html" / "index.html").read_text()
    assert html.count('class="trend-cell"') == 2 and html.count('class="mark point') == 2 * 2 * 2
    assert html.count("point mean regression") == 1 and 'id="regressions"' not in html
