"""The HTML report as published by the benchmark flow: self-contained pages with the right numbers."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from prefect_agentenv.cli import app
from prefect_agentenv.settings import get_settings

pytestmark = pytest.mark.usefixtures("bench_runs")


def test_the_benchmark_flow_publishes_the_report_and_links_it(bench_runs: dict[str, Any]) -> None:
    last = bench_runs["out"]
    assert bench_runs["index"].is_file() and last["report_url"] in last["markdown"]
    assert "/benchmarks/view-bench/" in last["report_url"] and last["report_url"].endswith("/report/index.html")
    pages = list((bench_runs["index"].parent / "runs").glob("*.html"))
    assert len(pages) == 3


def test_the_pages_fetch_nothing(bench_runs: dict[str, Any]) -> None:
    folder = bench_runs["index"].parent
    for page in [folder / "index.html", *(folder / "runs").glob("*.html")]:
        html = page.read_text()
        assert not re.search(r"""(src=|<link[^>]*href=)["'](https?:)?//""", html), page.name
        assert "<script src" not in html and "@import" not in html


@pytest.fixture
def bench_home(bench_runs: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The settings point at the benchmark's store for this test only."""
    monkeypatch.setenv("PREFECT_AGENTENV_HOME", str(bench_runs["home"]))
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.mark.usefixtures("bench_home")
def test_view_renders_any_run_of_the_benchmark_from_the_store(bench_runs: dict[str, Any], tmp_path: Any) -> None:
    latest = CliRunner().invoke(app, ["view", "--benchmark", "view-bench", "--out", str(tmp_path / "latest")])
    assert latest.exit_code == 0, latest.output
    html = (tmp_path / "latest" / "index.html").read_text()
    # beta dropped from 1 to 0 in its only pair: the paired comparison ties it (McNemar's p=1), and
    # the report lists what the summary lists, so no regression.
    assert bench_runs["out"]["run_id"] in html and 'id="regressions"' not in html
    assert bench_runs["out"]["regressions"] == [] and bench_runs["out"]["comparison"]["overall"]["verdict"] == "tied"
    older = CliRunner().invoke(app, ["view", "--benchmark", "view-bench", "--run", "nightly-1",
                                     "--out", str(tmp_path / "older")])
    assert older.exit_code == 0, older.output
    html = (tmp_path / "older" / "index.html").read_text()
    assert "mean score 0.833" in html and 'id="regressions"' not in html
    assert html.count('class="mark point') == 2, "the trend of an older run stops at that run"
