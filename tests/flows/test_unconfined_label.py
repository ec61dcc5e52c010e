"""A run whose agents ran unconfined works, and is labelled so wherever its scores appear: each
result's setup, the headline (the summary and the HTML report lead with it) and a comparison's
setup differences."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.flows.benchmark import benchmark
from prefect_agentenv.results.setup import compare_setups
from prefect_agentenv.results.store import read_results
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
