"""`prefect-agentenv publish`: exit codes and messages of publishing, refusing, checking and listing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from prefect_agentenv.cli import app

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("agentenv_home")


def write_bench(folder: Path, *, score: float = 1.0, version: int = 1) -> Path:
    (folder / "grade.json").write_text(json.dumps({"id": "grade", "steps": [
        {"id": "work", "type": "test_noop", "depends_on": []}, {"id": "grade", "type": "test_score", "score": score}]}))
    path = folder / "bench.yaml"
    path.write_text(yaml.safe_dump({"name": "Cli", "slug": "cli-bench", "version": version, "tasks": [
        {"id": "graded", "path": "grade.json"},
        {"id": "steady", "steps": [{"id": "grade", "type": "test_score", "score": 0.5}]}]}))
    return path


def test_publish_freezes_the_benchmark_and_says_how_to_run_it(tmp_path: Path) -> None:
    result = runner.invoke(app, ["publish", str(write_bench(tmp_path))])
    assert result.exit_code == 0, result.output
    assert re.search(r"published cli-bench@1 \(sha256 [0-9a-f]{64}\)", result.output)
    assert "task graded  sha256:" in result.output and "task steady  sha256:" in result.output
    assert "prefect-agentenv bench cli-bench@1" in result.output
    again = runner.invoke(app, ["publish", str(tmp_path / "bench.yaml")])
    assert again.exit_code == 0 and "already published with this content" in again.output


def test_other_content_under_a_published_version_exits_2_naming_the_task(tmp_path: Path) -> None:
    path = write_bench(tmp_path)
    assert runner.invoke(app, ["publish", str(path)]).exit_code == 0
    write_bench(tmp_path, score=0.0)
    refused = runner.invoke(app, ["publish", str(path)])
    assert refused.exit_code == 2
    assert "cli-bench@1 is already published with other content" in refused.output
    assert "tasks that differ: graded" in refused.output and "step grade: score default → 0.0" in refused.output
    assert "Traceback" not in refused.output
    write_bench(tmp_path, score=0.0, version=2)
    assert runner.invoke(app, ["publish", str(path)]).exit_code == 0


def test_check_exits_0_when_the_files_match_and_1_with_a_diff_per_task_when_they_drift(tmp_path: Path) -> None:
    path = write_bench(tmp_path)
    unpublished = runner.invoke(app, ["publish", "--check", str(path)])
    assert unpublished.exit_code == 0 and "cli-bench@1 is not published yet" in unpublished.output
    runner.invoke(app, ["publish", str(path)])
    matched = runner.invoke(app, ["publish", "--check", str(path)])
    assert matched.exit_code == 0 and "matches cli-bench@1" in matched.output
    write_bench(tmp_path, score=0.25)
    drifted = runner.invoke(app, ["publish", "--check", str(path)])
    assert drifted.exit_code == 1
    assert "drifts from cli-bench@1" in drifted.output and "1 task(s) differ: graded" in drifted.output
    assert "  - task graded: changed" in drifted.output and "steady" not in drifted.output
    assert runner.invoke(app, ["publish", "--list", "cli-bench"]).output.count("cli-bench@") == 1  # nothing stored


def test_list_shows_every_version_with_its_hash_and_date(tmp_path: Path) -> None:
    path = write_bench(tmp_path)
    runner.invoke(app, ["publish", str(path)])
    write_bench(tmp_path, score=0.0, version=2)
    runner.invoke(app, ["publish", str(path)])
    for target in ("cli-bench", str(path)):
        listed = runner.invoke(app, ["publish", "--list", target])
        assert listed.exit_code == 0, listed.output
        lines = listed.output.strip().splitlines()
        assert [line.split()[0] for line in lines] == ["cli-bench@1", "cli-bench@2"]
        assert all(re.search(r"sha256:[0-9a-f]{64}  \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ", line) for line in lines)
        assert lines[-1].endswith("(latest)")


def test_user_mistakes_exit_2_with_one_line(tmp_path: Path) -> None:
    missing = runner.invoke(app, ["publish", str(tmp_path / "nope.yaml")])
    assert missing.exit_code == 2 and "is not a file" in missing.output
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"name": "Bad", "slug": "bad", "tasks": [{"id": "x", "path": "missing.json"}]}))
    invalid = runner.invoke(app, ["publish", str(bad)])
    assert invalid.exit_code == 2 and "1 problem(s)" in invalid.output and "missing.json" in invalid.output
    unknown = runner.invoke(app, ["publish", "--list", "never-published"])
    assert unknown.exit_code == 2 and "has no published version" in unknown.output
    both = runner.invoke(app, ["publish", "--check", "--list", "x"])
    assert both.exit_code == 2 and "exclude each other" in both.output


def test_bench_refuses_a_version_that_is_not_published(tmp_path: Path) -> None:
    runner.invoke(app, ["publish", str(write_bench(tmp_path))])
    result = runner.invoke(app, ["bench", "cli-bench@7"])
    assert result.exit_code == 2
    assert "cli-bench@7 is not published" in result.output and "published versions: 1" in result.output
