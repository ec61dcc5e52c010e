"""`prefect-agentenv view`: which run to show, clear errors, the folder it writes."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from prefect_agentenv.cli import app
from prefect_agentenv.context import PromptResponse, RunContext
from prefect_agentenv.engine.reporting import build_report
from prefect_agentenv.results.task_report import write_report
from prefect_agentenv.transcript import build_transcript

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("agentenv_home")


def test_view_needs_exactly_one_thing_to_show() -> None:
    result = runner.invoke(app, ["view"])
    assert result.exit_code == 2 and "give one of REPORT, --benchmark SLUG or --task-run ID" in result.output


def test_an_unknown_benchmark_is_a_clear_error_not_a_traceback() -> None:
    result = runner.invoke(app, ["view", "--benchmark", "never-ran"])
    assert result.exit_code == 1 and "benchmark 'never-ran' has no run" in result.output
    assert "Traceback" not in result.output


def test_a_task_report_becomes_an_index_and_a_transcript_page(tmp_path: Path) -> None:
    context = RunContext(prompt_responses={"p": PromptResponse(prompt_id="p", prompt="Hi <b>", response="Hello")})
    transcript = build_transcript(task_id="t1", run_id="r1", context=context, steps=[], store=None)
    report = build_report(task_id="t1", flow_run_id="r1", result=None, started_at="2026-01-01T00:00:00+00:00",
                          duration_s=1.0, teardown=[], warnings=[], transcript=transcript)
    path = write_report(report, tmp_path / "report.json")
    result = runner.invoke(app, ["view", str(path), "--out", str(tmp_path / "html")])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "html" / "runs" / "t1.seed0.epoch0.html").read_text()
    assert "Hi &lt;b&gt;" in page and "<b>" not in page.split("<pre>", 1)[1].split("</pre>", 1)[0]
    assert (tmp_path / "html" / "index.html").is_file() and "index.html" in result.output
