"""The HTML report and the Prefect UI in a real Chromium (Debian's), driven by Playwright.

Skipped, with the reason printed, when chromium or playwright is missing. With
``AGENTENV_SCREENSHOTS=<folder>`` the tests also save the screenshots of docs/reading-results.md
(``make screenshots``).
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from prefect_agentenv.viewer.serve import report_server
from real_run import BIN, RealRun

from .browser import ConsoleErrors, chromium, requires_browser

pytestmark = [requires_browser, pytest.mark.slow]
SHOTS = os.environ.get("AGENTENV_SCREENSHOTS")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    p = context.new_page()
    p.errors = ConsoleErrors()
    p.errors.watch(p)
    p.fetched = []
    p.on("request", lambda r: p.fetched.append(r.url))
    yield p
    context.close()


def shot(page: Any, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / name), full_page=True)


def visible_tasks(page: Any) -> list[str]:
    return page.eval_on_selector_all("#runs tbody tr:not([hidden]) td:first-child", "cells => cells.map(c => c.innerText)")


def test_the_report_opens_with_its_summary_and_fetches_nothing(page: Any, bench_runs: dict[str, Any]) -> None:
    page.goto(bench_runs["index"].as_uri())
    assert page.title() == f"View bench — run {bench_runs['out']['run_id']}"
    assert "mean score 0.500, pass rate 33% (1/3 passed" in page.inner_text(".headline")
    # beta dropped in its one pair: the paired comparison ties it, so the report lists no regression.
    assert page.query_selector("#regressions") is None
    assert sorted(visible_tasks(page)) == ["alpha", "beta", "gamma"]
    shot(page, "report-index.png")
    assert page.errors == []
    assert [u for u in page.fetched if not u.startswith(("file:", "data:"))] == []


def test_the_table_filters_by_tag_and_outcome_and_sorts_by_score(page: Any, bench_runs: dict[str, Any]) -> None:
    page.goto(bench_runs["index"].as_uri())
    page.select_option("#filter-tag", "fast")
    assert sorted(visible_tasks(page)) == ["alpha", "beta"] and page.inner_text("#shown") == "2"
    page.select_option("#filter-outcome", "BELOW_ONE")
    assert visible_tasks(page) == ["beta"]
    page.select_option("#filter-tag", "")
    assert sorted(visible_tasks(page)) == ["beta", "gamma"]
    page.select_option("#filter-outcome", "")
    page.click("#runs th:has-text('score')")
    assert visible_tasks(page) == ["beta", "gamma", "alpha"]
    page.click("#runs th:has-text('score')")
    assert visible_tasks(page) == ["alpha", "gamma", "beta"]
    assert page.errors == []


def test_a_drill_down_link_opens_the_task_runs_transcript_and_leads_back(page: Any, bench_runs: dict[str, Any]) -> None:
    page.goto(bench_runs["index"].as_uri())
    page.click("#runs tr[data-task=beta] a.drill")
    assert page.inner_text("h1") == "beta · seed 0 · epoch 0"
    assert page.locator("svg[data-chart=timeline] .mark").count() == 2
    assert page.inner_text("#verifier-score td.r-fail") == "fail"
    page.click("#back")
    assert page.url.endswith("/report/index.html") and page.errors == []


def test_the_charts_draw_one_mark_per_number(page: Any, bench_runs: dict[str, Any]) -> None:
    page.goto(bench_runs["index"].as_uri())
    marks = page.eval_on_selector_all(
        "svg[data-chart=scores] .mark", "els => els.map(e => [e.dataset.label, Number(e.dataset.value)])")
    assert marks == [["tag: fast", 0.5], ["tag: mail", 1.0], ["tag: slow", 0.5], ["axis: correctness", 0.5]]
    assert page.locator("svg[data-chart=scores] .ci").count() == 2  # fast (n=2) and correctness (n=3)
    widths = page.eval_on_selector_all("svg[data-chart=scores] .mark", "els => els.map(e => e.getBBox().width)")
    assert widths[1] == pytest.approx(2 * widths[0], rel=0.01), "bars are drawn to scale"
    trend = page.eval_on_selector_all("svg[data-chart=trend] .mark", "els => els.map(e => [e.dataset.label, "
                                      "e.dataset.series, Number(e.dataset.value), e.classList.contains('regression')])")
    current = bench_runs["out"]["run_id"]
    assert [(t[0], t[1]) for t in trend] == [(r, s) for s in ("mean_score", "pass_rate")
                                              for r in ("nightly-1", "nightly-2", current)]
    assert [round(t[2], 3) for t in trend] == [0.833, 0.833, 0.5, 0.667, 0.667, 0.333]
    assert [t[0] for t in trend if t[3]] == []  # beta's one lost pair: tied by the paired test, no ring
    assert page.get_attribute("svg[data-chart=durations]", "data-marks") == "2"
    assert page.locator("svg.chart").count() == 3 and page.errors == []


def test_view_serve_serves_the_report_on_loopback(page: Any, bench_runs: dict[str, Any]) -> None:
    server = report_server(bench_runs["index"].parent)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        assert host == "127.0.0.1"
        page.goto(f"http://127.0.0.1:{port}/index.html")
        page.click("#runs a.drill >> nth=0")
        assert page.url.startswith(f"http://127.0.0.1:{port}/runs/") and page.errors == []
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_the_view_command_renders_a_real_runs_transcript(page: Any, real_run: RealRun, tmp_path: Path) -> None:
    out = tmp_path / "view"
    done = subprocess.run([str(BIN / "prefect-agentenv"), "view", str(real_run.report_path), "--out", str(out)],
                          env=real_run.env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    page.goto((out / "index.html").as_uri())
    page.click("#runs a.drill")
    assert page.locator("ol.tool-calls > li").count() == 3
    assert "Re: Q3 numbers" in page.inner_text("section.env-changes")
    page.click("ol.tool-calls > li >> nth=1 >> summary")
    shot(page, "report-transcript.png")
    href = page.get_attribute("a.judge-trajectory", "href")
    assert href and href.startswith("../files/")
    page.click("a.judge-trajectory")
    assert '"events"' in page.inner_text("body") and page.errors == []


def test_the_prefect_ui_shows_the_transcript_artifact_on_the_flow_run_page(page: Any, real_run: RealRun) -> None:
    flow_run = real_run.report["flow_run_id"]
    page.goto(f"{real_run.server_url}/runs/flow-run/{flow_run}?tab=Artifacts")
    page.get_by_text("Artifacts", exact=True).first.click()
    card = page.get_by_text("agentenv-transcript-demo-transcript").first
    card.wait_for(timeout=60_000)
    shot(page, "prefect-ui-artifacts.png")
    card.click()
    page.locator("h1", has_text="Transcript of").wait_for(timeout=60_000)
    assert "email_search" in page.inner_text("body")
    shot(page, "prefect-ui-transcript.png")
