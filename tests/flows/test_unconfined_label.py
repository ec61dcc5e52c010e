"""A run whose agents ran unconfined works, and is labelled so wherever its scores appear: each
result's setup, the headline (the summary and the HTML report lead with it) and a comparison's
setup differences."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.flows.benchmark import benchmark
from prefect_agentenv.results.stats.run_setup import compare_setups
from prefect_agentenv.results.store.run_store import read_results
from prefect_agentenv.settings import get_settings

from .test_benchmark_budget import SLUG, write_bench

pytestmark = pytest.mark.usefixtures("prefect_harness", "agentenv_home")


async def test_an_unconfined_run_is_labelled_in_its_results_headline_and_comparison(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bench = str(write_bench(tmp_path, epochs=1))
    state = await benchmark(path=bench, return_state=True)
    confined = await state.result(raise_on_failure=False)
    monkeypatch.setenv("PREFECT_AGENTENV_AGENT_CONFINEMENT", "none")
    get_settings.cache_clear()
    try:
        state = await benchmark(path=bench, return_state=True)
        loose = await state.result(raise_on_failure=False)
    finally:
        get_settings.cache_clear()
    assert state.is_completed(), state.message

    with get_artifact_store() as store:
        before = read_results(store, SLUG, confined["run_id"])
        after = read_results(store, SLUG, loose["run_id"])
    assert [a.confinement for r in before for a in (r.setup.agents if r.setup else [])] == ["confined"]
    assert [a.confinement for r in after for a in (r.setup.agents if r.setup else [])] == ["unconfined"]
    assert "UNCONFINED" not in confined["headline"]
    assert "UNCONFINED agents: assistant" in loose["headline"]
    sentence = compare_setups(before, after).sentence()
    assert "agent assistant: llm" in sentence and "(unconfined)" in sentence, sentence


async def test_a_document_that_switches_confinement_off_is_labelled_unconfined_where_its_scores_appear(
        tmp_path: Path) -> None:
    path = write_bench(tmp_path, epochs=1)
    document = yaml.safe_load(path.read_text())
    document["tasks"][0]["steps"][0]["confinement"] = "none"
    path.write_text(yaml.safe_dump(document))

    state = await benchmark(path=str(path), return_state=True)
    out = await state.result(raise_on_failure=False)

    assert state.is_completed(), state.message
    with get_artifact_store() as store:
        [result] = read_results(store, SLUG, out["run_id"])
    assert [a.confinement for a in (result.setup.agents if result.setup else [])] == ["unconfined"]
    assert "UNCONFINED agents: assistant" in out["headline"]


def test_a_confinement_the_runner_does_not_know_is_a_document_error_at_its_step() -> None:
    from prefect_agentenv.documents import validate_data

    result = validate_data([{"id": "coder", "type": "deploy_agent", "a2a_agent_id": "llm", "confinement": "off"}])

    assert not result.ok
    assert "coder" in result.problems[0].render() and "confinement" in result.problems[0].render()
