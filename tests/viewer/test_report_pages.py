"""The HTML report as published by the benchmark flow: self-contained pages with the right numbers."""

from __future__ import annotations

import re
from typing import Any

import pytest

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
